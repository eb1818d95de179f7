// Package doccheck holds the test that keeps README.md and docs/*.md in
// step with the host: every route they name is one the API registers,
// every error code they name is one the code defines, their links stay
// inside the repository, and the console output they show is what the
// agenthost binary prints. It has no code of its own.
package doccheck
