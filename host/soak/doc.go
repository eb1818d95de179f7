// Package soak holds the soak test (make soak): real `agenthost serve`
// processes on SQLite and PostgreSQL kept busy with chat sessions of mock
// turns for a given duration, checking that every turn completes and that
// the host's and its plugins' memory, file descriptors and goroutines stay
// where they were after warm-up. It has no code of its own.
package soak
