package core

// FileRef is one file of a working copy by content digest: what a manifest
// holds when the contents themselves are stored apart, once per sha256, and
// streamed rather than carried around.
type FileRef struct {
	Path   string
	Mode   uint32
	SHA256 string
}
