// Package migrations embeds the schema migrations, one folder per SQL
// dialect. golang-migrate runs them (iofs source) at start-up and from
// `agenthost migrate`. Files hold no BEGIN/COMMIT: the runner wraps each.
package migrations

import "embed"

// FS holds postgres/*.sql and sqlite/*.sql.
//
//go:embed postgres/*.sql sqlite/*.sql
var FS embed.FS
