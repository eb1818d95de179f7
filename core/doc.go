// Package core is agenthost's domain: run states and their transitions, event
// types and their envelope, stable error codes. Plain Go with no I/O; the host
// builds on it and nothing here imports any other package of ours.
package core
