package testenv

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// RequireChromiumEnv, set to 1 (.ci/run sets it), makes a missing Chromium
// fail the browser tests instead of skipping them.
const RequireChromiumEnv = "AGENTHOST_REQUIRE_CHROMIUM"

// Browser starts a headless Chromium (Debian's chromium package) for t and
// returns a context driving one tab of it; the browser ends with the test.
// Without Chromium t is skipped, unless RequireChromiumEnv says it must be
// there.
func Browser(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv(RequireChromiumEnv) == "1" {
			t.Fatalf("chromium is not installed and %s=1 (apt-get install chromium)", RequireChromiumEnv)
		}
		t.Skip("chromium is not installed: apt-get install chromium (.ci/run does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		// Tests run as root in CI, where Chromium's own sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return ctx
}
