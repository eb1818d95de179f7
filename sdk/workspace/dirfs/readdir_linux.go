package dirfs

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// How Linux lists a folder for a walk: getdents on the folder's descriptor
// and an fstatat per name, without os.File.ReadDir's two or three objects
// per name. readdir_darwin.go keeps os.File.ReadDir (macOS has no
// getdents, and x/sys emulates it in quadratic time).

// statEntry is one name of a folder with its lstat (taken relative to the
// folder's descriptor, never following a symlink). It is both the
// fs.DirEntry and the fs.FileInfo of that name, so that a folder's entries
// are one allocation rather than two or three objects each: a walk of a
// 10,000-file tree spends most of its time listing folders.
type statEntry struct {
	name                string
	mode                fs.FileMode
	size                int64
	ino                 uint64
	mtimeSec, mtimeNsec int64
	ctimeSec, ctimeNsec int64
}

var (
	_ fs.DirEntry = (*statEntry)(nil)
	_ fs.FileInfo = (*statEntry)(nil)
)

func (e *statEntry) Name() string               { return e.name }
func (e *statEntry) IsDir() bool                { return e.mode.IsDir() }
func (e *statEntry) Type() fs.FileMode          { return e.mode.Type() }
func (e *statEntry) Info() (fs.FileInfo, error) { return e, nil }
func (e *statEntry) Size() int64                { return e.size }
func (e *statEntry) Mode() fs.FileMode          { return e.mode }
func (e *statEntry) ModTime() time.Time         { return time.Unix(e.mtimeSec, e.mtimeNsec) }

// Sys is nil: the stat key is read through statKey instead of a
// platform's Stat_t, which would cost a copy of ~144 bytes per name.
func (e *statEntry) Sys() any { return nil }

// statKey is the entry's part of hashCache's key, as statKey computes it
// from an os.FileInfo: the same nanosecond values for the same stat.
func (e *statEntry) statKey() (mtime, ctime int64, ino uint64) {
	return time.Unix(e.mtimeSec, e.mtimeNsec).UnixNano(), time.Unix(e.ctimeSec, e.ctimeNsec).UnixNano(), e.ino
}

// fileMode converts a stat's st_mode as os.Lstat does.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// readEntries lists folder d (opened through the root; dir is its path,
// "" for the root), sorted by path, with each name lstat'ed relative to d's
// descriptor. A name removed between the listing and its lstat is left
// out, as os.File.ReadDir does. With names (nil for none), the folder's
// names come from there while the folder is unchanged, and go there when
// it is read.
func readEntries(d *os.File, dir string, names *nameCache) ([]entry, error) {
	rc, err := d.SyscallConn()
	if err != nil {
		return nil, err
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var out []entry
	var opErr error
	err = rc.Control(func(fd uintptr) {
		// The folder's stat comes before its names are read, so that
		// names read after a change are never kept under the stat of
		// before it.
		var key dirKey
		keyed := false
		if names != nil {
			var st unix.Stat_t
			if err := unix.Fstat(int(fd), &st); err == nil {
				key, keyed = dirKey{dev: uint64(st.Dev), ino: st.Ino, mtime: time.Unix(st.Mtim.Unix()).UnixNano(), ctime: time.Unix(st.Ctim.Unix()).UnixNano()}, true
			}
		}
		rels, cached := []string(nil), false
		if keyed {
			rels, cached = names.get(dir, key)
		}
		if !cached {
			rels, opErr = readNames(int(fd), prefix, d.Name())
			if opErr != nil {
				return
			}
			slices.Sort(rels)
			if keyed {
				names.put(dir, key, rels)
			}
		}
		stats := make([]statEntry, len(rels))
		out = make([]entry, 0, len(rels))
		var st unix.Stat_t
		for _, rel := range rels {
			name := rel[len(prefix):]
			_, err := retryEINTR(func() (int, error) { return 0, unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
			if err == unix.ENOENT {
				continue
			}
			if err != nil {
				opErr = &fs.PathError{Op: "fstatat", Path: d.Name() + "/" + name, Err: err}
				return
			}
			s := &stats[len(out)]
			*s = statEntry{name: name, mode: fileMode(uint32(st.Mode)), size: st.Size, ino: st.Ino,
				mtimeSec: st.Mtim.Sec, mtimeNsec: st.Mtim.Nsec, ctimeSec: st.Ctim.Sec, ctimeNsec: st.Ctim.Nsec}
			out = append(out, entry{rel: rel, d: s})
		}
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readNames reads the names of folder fd (getdents64) and returns
// prefix+name for each, in the order read. name is the folder's for
// errors.
func readNames(fd int, prefix, name string) ([]string, error) {
	buf := direntBuffers.Get().(*[]byte)
	defer direntBuffers.Put(buf)
	var block []byte
	var ends []int // where each entry's path ends in block
	for {
		n, err := retryEINTR(func() (int, error) { return unix.ReadDirent(fd, *buf) })
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: name, Err: err}
		}
		if n <= 0 {
			break
		}
		if block == nil {
			// A record takes 24 bytes at least: room for every path
			// of a folder read in one call.
			block = make([]byte, 0, n+n/24*len(prefix))
			ends = make([]int, 0, n/24)
		}
		block, ends = appendDirents(block, ends, prefix, (*buf)[:n])
	}
	// One string holds the folder's paths rather than one each: they live
	// and die together, in the listing that returns them.
	all := string(block)
	rels := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		rels[i] = all[start:end]
		start = end
	}
	return rels, nil
}

// The layout of a struct linux_dirent64 record, the same on every
// architecture: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), then
// d_name, NUL-terminated and padded to the record's length.
const (
	direntIno    = 0
	direntReclen = 16
	direntName   = 19
)

// appendDirents appends prefix+name to block for each name of the records
// in buf (what getdents64 returned), and where it ends to ends. As
// os.File.ReadDir, it skips "." and ".." and records without an inode.
func appendDirents(block []byte, ends []int, prefix string, buf []byte) ([]byte, []int) {
	for len(buf) >= direntName {
		reclen := int(binary.NativeEndian.Uint16(buf[direntReclen:]))
		if reclen < direntName || reclen > len(buf) {
			break // a malformed record: what follows cannot be trusted
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		name := rec[direntName:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if binary.NativeEndian.Uint64(rec[direntIno:]) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		block = append(block, prefix...)
		block = append(block, name...)
		ends = append(ends, len(block))
	}
	return block, ends
}

// retryEINTR calls fn again while it is interrupted by a signal, as os
// does for the calls it makes.
func retryEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// direntBufferBytes is the buffer getdents fills per call: os.File uses
// 8 KiB; 32 KiB holds a folder of several hundred names in one call.
const direntBufferBytes = 32 << 10

// direntBuffers are the buffers folders are read through.
var direntBuffers = sync.Pool{New: func() any { b := make([]byte, direntBufferBytes); return &b }}
