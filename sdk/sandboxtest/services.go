package sandboxtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testServices checks long-lived processes (workspace.Services) on a backend
// that provides them, and a clear refusal on one that does not.
func (k *kit) testServices(t *testing.T) {
	ctx := context.Background()
	info, err := k.c.Info(ctx)
	require.NoError(t, err)
	id, ws := k.create(t, fileSet())
	svc, ok := ws.(workspace.Services)
	require.True(t, ok, "the sdk's workspace client forwards services")
	if !slices.Contains(plugin.Features(info.Capabilities[plugin.CapabilityProvides]), plugin.FeatureServices) {
		_, err := svc.StartService(ctx, workspace.ServiceSpec{Name: "x", Argv: []string{"true"}})
		code(t, err, plugin.CodeUnsupported, "a backend without services says so")
		return
	}

	// A well-behaved service: says where it listens, writes to its state
	// folder, leaves on SIGTERM.
	// The trap comes first: once the port line is out, SIGTERM is handled.
	script := `trap 'echo bye; exit 0' TERM; echo $$ > pid; echo "port={port}"; echo kept > {state}/marker; while :; do sleep 0.1; done`
	first, err := svc.StartService(ctx, workspace.ServiceSpec{Name: "web", Argv: []string{"sh", "-c", script}})
	require.NoError(t, err)
	assert.True(t, first.Started && first.Running)
	require.Positive(t, first.Port, "{port} became a port")
	assert.NotEmpty(t, first.Address)
	require.Eventually(t, func() bool {
		si, err := svc.ServiceStatus(ctx, "web")
		return err == nil && strings.Contains(string(si.OutputTail), fmt.Sprintf("port=%d", first.Port))
	}, promptly, 20*time.Millisecond, "the service's output is kept and {port} was substituted")
	again, err := svc.StartService(ctx, workspace.ServiceSpec{Name: "web", Argv: []string{"false"}})
	require.NoError(t, err)
	assert.False(t, again.Started, "starting a running service answers it")
	assert.Equal(t, first.Port, again.Port)
	assert.True(t, first.StartedAt.Equal(again.StartedAt))

	files, err := k.c.Snapshot(ctx, id, nil)
	require.NoError(t, err)
	for _, f := range files {
		assert.NotContains(t, f.Path, "marker", "a service's state folder is outside the working copy")
	}

	_, err = svc.StartService(ctx, workspace.ServiceSpec{Name: "Bad/Name", Argv: []string{"true"}})
	code(t, err, plugin.CodeInvalidArgument, "a bad service name")
	_, err = svc.StartService(ctx, workspace.ServiceSpec{Name: "noargv"})
	code(t, err, plugin.CodeInvalidArgument, "a service without a command")
	_, err = svc.ServiceStatus(ctx, "nope")
	code(t, err, plugin.CodeNotFound, "an unknown service")
	require.NoError(t, svc.StopService(ctx, "nope", 0), "stopping an unknown service is fine")

	pid := readPid(t, ws, "pid")
	require.NoError(t, svc.StopService(ctx, "web", 10*time.Second))
	si, err := svc.ServiceStatus(ctx, "web")
	require.NoError(t, err)
	assert.False(t, si.Running)
	assert.Equal(t, 0, si.ExitCode, "SIGTERM came first and the service left cleanly: %s", si.OutputTail)
	assert.Contains(t, string(si.OutputTail), "bye")
	k.assertGone(t, pid, "a stopped service's process survived")

	// One that ignores SIGTERM is killed after the grace. Its pid file is
	// written after the trap is set: a SIGTERM sent as soon as the file
	// appears must find the trap in place.
	stubborn := `trap '' TERM; echo $$ > pid2; while :; do sleep 0.1; done`
	_, err = svc.StartService(ctx, workspace.ServiceSpec{Name: "stubborn", Argv: []string{"sh", "-c", stubborn}})
	require.NoError(t, err)
	pid2 := waitPid(t, ws, "pid2")
	require.NoError(t, svc.StopService(ctx, "stubborn", 300*time.Millisecond))
	si, err = svc.ServiceStatus(ctx, "stubborn")
	require.NoError(t, err)
	assert.Equal(t, "SIGKILL", si.Signal)
	k.assertGone(t, pid2, "a service that ignored SIGTERM survived")

	// One that ends by itself is reported ended, and starts again.
	_, err = svc.StartService(ctx, workspace.ServiceSpec{Name: "brief", Argv: []string{"sh", "-c", "echo going; exit 3"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		si, err := svc.ServiceStatus(ctx, "brief")
		return err == nil && !si.Running
	}, promptly, 20*time.Millisecond)
	si, err = svc.ServiceStatus(ctx, "brief")
	require.NoError(t, err)
	assert.Equal(t, 3, si.ExitCode)
	restarted, err := svc.StartService(ctx, workspace.ServiceSpec{Name: "brief", Argv: []string{"sh", "-c", "sleep 30"}})
	require.NoError(t, err)
	assert.True(t, restarted.Started && restarted.Running, "an ended service starts again")

	// Stopping the sandbox stops its services.
	_, err = svc.StartService(ctx, workspace.ServiceSpec{Name: "left", Argv: []string{"sh", "-c", `echo $$ > pid3; exec sleep 300`}})
	require.NoError(t, err)
	pid3 := waitPid(t, ws, "pid3")
	require.NoError(t, k.c.Stop(ctx, id))
	k.assertGone(t, pid3, "a service survived its sandbox's stop")
	_, err = svc.ServiceStatus(ctx, "left")
	code(t, err, plugin.CodeNotFound, "services of a stopped sandbox")
}
