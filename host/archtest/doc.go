// Package archtest holds the test that enforces DESIGN.md's dependency rules
// across the module; it has no code of its own.
package archtest
