//go:build unix

package sqlite

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The writer's VFS: SQLite's unix VFS (or unix-excl) with the WAL file's
// writes of one transaction coalesced into one pwrite(2).
//
// SQLite appends a transaction to the WAL as frames, each written as two
// writes: a 24-byte frame header, then the page. A conversation turn's run
// write is ~8 frames, so 16 system calls, which cost more than the b-tree
// work on this kind of machine (docs/adr/sqlite-wal-coalescing.md). Here the
// WAL file buffers the writes that append to it, in C memory, and writes the
// buffer with one call:
//
//   - when the page of a commit frame (a header whose "database size"
//     field is not zero) has been appended: inside the write call that
//     completes the transaction, before SQLite appends the frames to the
//     WAL index and so before any reader can see them;
//   - before any other operation on the file (read, sync, truncate, size,
//     file control, close), so that SQLite never observes the file without
//     its own writes;
//   - before a write that does not append (SQLite rewriting a frame of the
//     transaction, or a new WAL starting at offset 0), which is then written
//     through, as is a write larger than the buffer.
//
// A write error of the buffered bytes is returned by the call that writes
// them: for a commit, the write of the commit frame's page, which fails the
// transaction as the pwrite of that page would have. Nothing SQLite has
// reported as committed is ever still in the buffer, so a crash of the
// process loses no commit; the file's bytes are the same as without the
// buffer, so other processes and tools (Agno, the sqlite3 shell) read it as
// before.
//
// What is still buffered when the transaction ends is the frames of a
// transaction that did not commit (a commit writes the buffer): they are
// dropped when the connection releases the WAL's write lock, which it does
// on the database file (xShmLock), so the VFS wraps the database file too and
// links each WAL to its database file. Written later, they could overwrite
// frames another connection committed at the same offsets meanwhile. Other
// files (journals, temporary files) are the base VFS's own, untouched.

const (
	// walVFSPrefix names the coalescing VFS after its base: "agentry-wal-unix".
	walVFSPrefix = "agentry-wal-"
	// walBufferMax bounds the buffer; a longer transaction is written in
	// pieces of at most this many bytes. The unix VFS writes at most
	// 0x1ffff bytes a call (seekAndWriteFd masks the length to 17 bits,
	// and a larger write comes back short, as SQLITE_FULL).
	walBufferMax = 120 << 10
	// walFrameHeader is the size of a WAL frame header.
	walFrameHeader = 24
)

// walFile is the coalescing VFS's file for a WAL or a main database file, in
// the memory SQLite allocates for it (szOsFile); the base VFS's file follows
// it. A database file uses only base, methods, link and name.
type walFile struct {
	base    sqlite3.Tsqlite3_file // pMethods: walVFS.walMethods or .dbMethods
	methods uintptr               // the base file's sqlite3_io_methods
	// link is a WAL's database file, or a database file's open WAL; 0
	// when none (a WAL without one writes through, unbuffered).
	link uintptr
	name uintptr // a database file's name: its key in walVFS.dbs
	buf  uintptr // C memory, cap bytes
	cap  int64
	n    int64 // bytes buffered
	off  int64 // file offset of the buffer's first byte
	// end is the offset after the last byte written (buffered or not), so
	// the next appending write starts there; -1 when unknown.
	end int64
	// commit: the buffer ends with a commit frame's header; its page
	// completes the transaction.
	commit int64
}

const walFileSize = int64(unsafe.Sizeof(walFile{}))

// walVFS registers the coalescing VFSes once per process.
var walVFS struct {
	once       sync.Once
	err        error
	walMethods uintptr             // the WAL files' sqlite3_io_methods (C memory)
	dbMethods  uintptr             // the database files'
	bases      map[uintptr]uintptr // VFS → its base VFS; read-only once registered

	mu sync.Mutex
	// dbs are the open database files by the address of their file name,
	// which SQLite also reaches from the name of their WAL
	// (sqlite3_filename_database): a WAL's open finds its database file.
	dbs map[uintptr]uintptr
}

// registerWriterVFS registers the coalescing VFSes with SQLite, once per
// process; the writer connection's string names one (writerVFS).
func registerWriterVFS() error {
	walVFS.once.Do(registerWALVFS)
	return walVFS.err
}

// writerVFS is the writer connection's VFS: the coalescing one over unix,
// or over unix-excl for Config.Exclusive.
func writerVFS(exclusive bool) string {
	if exclusive {
		return walVFSPrefix + exclusiveVFS
	}
	return walVFSPrefix + "unix"
}

func registerWALVFS() {
	tls := libc.NewTLS()
	defer tls.Close()
	for _, db := range []bool{false, true} {
		m := newMethods(tls, db)
		if m == 0 {
			walVFS.err = fmt.Errorf("sqlite: out of memory registering %sunix", walVFSPrefix)
			return
		}
		if db {
			walVFS.dbMethods = m
		} else {
			walVFS.walMethods = m
		}
	}
	walVFS.bases = make(map[uintptr]uintptr, 2)
	walVFS.dbs = make(map[uintptr]uintptr)

	for _, base := range []string{"unix", exclusiveVFS} {
		cbase, err := libc.CString(base)
		if err != nil {
			walVFS.err = err
			return
		}
		b := sqlite3.Xsqlite3_vfs_find(tls, cbase)
		libc.Xfree(tls, cbase)
		if b == 0 {
			walVFS.err = fmt.Errorf("sqlite: SQLite has no %s VFS to build %s%s on", base, walVFSPrefix, base)
			return
		}
		name, err := libc.CString(walVFSPrefix + base)
		if err != nil {
			walVFS.err = err
			return
		}
		size := uint64(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{}))
		v := libc.Xcalloc(tls, 1, size)
		if v == 0 {
			walVFS.err = fmt.Errorf("sqlite: out of memory registering %s%s", walVFSPrefix, base)
			return
		}
		// Everything but the name, the file size and xOpen is the base's:
		// its methods do not read the VFS they are given beyond pAppData
		// and mxPathname, which are copied (unixOpen, which reads the
		// name, is called with the base).
		vfs := (*sqlite3.Tsqlite3_vfs)(ptr(v))
		*vfs = *(*sqlite3.Tsqlite3_vfs)(ptr(b))
		vfs.FpNext = 0
		vfs.FzName = name
		vfs.FszOsFile = int32(walFileSize) + vfs.FszOsFile
		*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&vfs.FxOpen)) = walOpen
		walVFS.bases[v] = b
		if rc := sqlite3.Xsqlite3_vfs_register(tls, v, 0); rc != sqlite3.SQLITE_OK {
			walVFS.err = fmt.Errorf("sqlite: registering %s%s: SQLite error %d", walVFSPrefix, base, rc)
			return
		}
	}
}

// newMethods allocates the sqlite3_io_methods of a WAL file (db false) or a
// database file (db true); 0 when out of memory. The two share what only
// forwards or writes the buffer first (a database file's is always empty).
func newMethods(tls *libc.TLS, db bool) uintptr {
	m := libc.Xcalloc(tls, 1, uint64(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
	if m == 0 {
		return 0
	}
	im := (*sqlite3.Tsqlite3_io_methods)(ptr(m))
	im.FiVersion = 3
	*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&im.FxClose)) = vfsClose
	*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&im.FxRead)) = walRead
	*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&im.FxWrite)) = walWrite
	*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&im.FxTruncate)) = walTruncate
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&im.FxSync)) = walSync
	*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&im.FxFileSize)) = walFileSizeOf
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&im.FxLock)) = walLock
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&im.FxUnlock)) = walUnlock
	*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&im.FxCheckReservedLock)) = walCheckReservedLock
	*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&im.FxFileControl)) = walFileControl
	*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&im.FxSectorSize)) = walSectorSize
	*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&im.FxDeviceCharacteristics)) = walDeviceCharacteristics
	*(*func(*libc.TLS, uintptr, int32, int32, int32, uintptr) int32)(unsafe.Pointer(&im.FxShmMap)) = walShmMap
	*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&im.FxShmLock)) = walShmLock
	*(*func(*libc.TLS, uintptr))(unsafe.Pointer(&im.FxShmBarrier)) = walShmBarrier
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&im.FxShmUnmap)) = walShmUnmap
	*(*func(*libc.TLS, uintptr, int64, int32, uintptr) int32)(unsafe.Pointer(&im.FxFetch)) = walFetch
	*(*func(*libc.TLS, uintptr, int64, uintptr) int32)(unsafe.Pointer(&im.FxUnfetch)) = walUnfetch
	if db {
		*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&im.FxWrite)) = dbWrite
		*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&im.FxShmLock)) = dbShmLock
	}
	return m
}

// ptr converts an address SQLite handed over (C memory, which Go's
// collector neither moves nor frees) to a pointer.
func ptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// sub is the base VFS's file within f.
func (f *walFile) sub() uintptr { return uintptr(unsafe.Pointer(f)) + uintptr(walFileSize) }

func (f *walFile) io() *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(ptr(f.methods))
}

func walOpen(tls *libc.TLS, v, name, file uintptr, flags int32, outFlags uintptr) int32 {
	base := walVFS.bases[v]
	bv := (*sqlite3.Tsqlite3_vfs)(ptr(base))
	open := *(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&bv.FxOpen))
	wal, db := flags&sqlite3.SQLITE_OPEN_WAL != 0, flags&sqlite3.SQLITE_OPEN_MAIN_DB != 0
	if !wal && !db || name == 0 {
		// A journal or temporary file: the base's, at the start of the
		// memory (szOsFile is larger than the base needs).
		return open(tls, base, name, file, flags, outFlags)
	}
	f := (*walFile)(ptr(file))
	*f = walFile{end: -1}
	if rc := open(tls, base, name, f.sub(), flags, outFlags); rc != sqlite3.SQLITE_OK {
		return rc // pMethods stays 0: SQLite does not close a file that did not open
	}
	f.methods = (*sqlite3.Tsqlite3_file)(ptr(f.sub())).FpMethods
	walVFS.mu.Lock()
	defer walVFS.mu.Unlock()
	if db {
		f.base.FpMethods, f.name = walVFS.dbMethods, name
		walVFS.dbs[name] = file
		return sqlite3.SQLITE_OK
	}
	f.base.FpMethods = walVFS.walMethods
	if d, ok := walVFS.dbs[sqlite3.Xsqlite3_filename_database(tls, name)]; ok && walFileOf(d).link == 0 {
		f.link, walFileOf(d).link = d, file
	}
	return sqlite3.SQLITE_OK
}

func walFileOf(p uintptr) *walFile { return (*walFile)(ptr(p)) }

// flush writes the buffer through the base file; the buffer is empty after
// it, written or not (a failed write fails the transaction that made it).
func (f *walFile) flush(tls *libc.TLS) int32 {
	if f.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n := f.n
	f.n = 0
	rc := f.write(tls, f.buf, int32(n), f.off)
	if rc != sqlite3.SQLITE_OK {
		f.end = -1
	}
	return rc
}

// write is the base file's xWrite.
func (f *walFile) write(tls *libc.TLS, data uintptr, amt int32, off int64) int32 {
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&f.io().FxWrite)))(tls, f.sub(), data, amt, off)
}

// writeThrough writes what is buffered, then this write, as the base file
// alone would have.
func (f *walFile) writeThrough(tls *libc.TLS, data uintptr, amt int32, off int64) int32 {
	f.commit = 0
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	rc := f.write(tls, data, amt, off)
	f.end = -1
	if rc == sqlite3.SQLITE_OK {
		f.end = off + int64(amt)
		if isCommitHeader(data, amt) {
			f.commit = 1 // its page, appended next, is written at once
		}
	}
	return rc
}

// isCommitHeader reports whether a write is a WAL frame header whose
// "database size after commit" field is set: the last frame of a commit.
func isCommitHeader(data uintptr, amt int32) bool {
	return amt == walFrameHeader && binary.BigEndian.Uint32(unsafe.Slice((*byte)(ptr(data)), amt)[4:8]) != 0
}

func walWrite(tls *libc.TLS, p, data uintptr, amt int32, off int64) int32 {
	f := walFileOf(p)
	n := int64(amt)
	if off != f.end || n > walBufferMax || f.link == 0 {
		// Not an append (SQLite rewriting a frame, a new WAL, the first
		// write after opening), too large to buffer, or a WAL whose
		// database file is not known (its rollbacks could not be seen).
		return f.writeThrough(tls, data, amt, off)
	}
	if f.n+n > walBufferMax {
		// A long transaction: its frames so far go now (f.commit is kept,
		// so a commit frame's page still ends the transaction).
		if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if f.n+n > f.cap {
		c := int64(walBufferMax)
		if f.cap == 0 && f.n+n <= 40<<10 {
			c = 40 << 10 // most transactions: a turn's run write is ~33 KB
		}
		nb := libc.Xrealloc(tls, f.buf, uint64(c))
		if nb == 0 {
			return f.writeThrough(tls, data, amt, off) // no memory to buffer
		}
		f.buf, f.cap = nb, c
	}
	if f.n == 0 {
		f.off = off
	}
	src := unsafe.Slice((*byte)(ptr(data)), n)
	copy(unsafe.Slice((*byte)(ptr(f.buf+uintptr(f.n))), n), src)
	f.n += n
	f.end = off + n
	switch {
	case f.commit != 0:
		// The commit frame's page: the transaction is complete.
		f.commit = 0
		return f.flush(tls)
	case isCommitHeader(data, amt):
		f.commit = 1
	}
	return sqlite3.SQLITE_OK
}

// drop forgets what is buffered: the frames of a transaction that ended
// without committing. After a commit there is nothing to drop, and the next
// transaction appends where the commit ended.
func (f *walFile) drop() {
	if f.n > 0 {
		f.n, f.end = 0, -1
	}
	f.commit = 0
}

// vfsClose closes a WAL or a database file: it drops what a WAL still
// buffers (a commit writes the buffer: what is left did not commit),
// unlinks the file from its WAL or database file, forgets a database
// file's name, and closes the base's file.
func vfsClose(tls *libc.TLS, p uintptr) int32 {
	f := walFileOf(p)
	f.drop()
	if f.buf != 0 {
		libc.Xfree(tls, f.buf)
		f.buf, f.cap = 0, 0
	}
	if f.name != 0 {
		walIndexUnmapped(p)
	}
	walVFS.mu.Lock()
	if f.name != 0 {
		delete(walVFS.dbs, f.name)
	}
	if f.link != 0 {
		walFileOf(f.link).link, f.link = 0, 0
	}
	walVFS.mu.Unlock()
	rc := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&f.io().FxClose)))(tls, f.sub())
	f.base.FpMethods = 0
	return rc
}

// dbWrite is the base's: a database file is not buffered.
func dbWrite(tls *libc.TLS, p, data uintptr, amt int32, off int64) int32 {
	return walFileOf(p).write(tls, data, amt, off)
}

// walWriteLock is the WAL index lock a writer holds (WAL_WRITE_LOCK, wal.c).
const walWriteLock = 0

// dbShmLock takes or releases WAL index locks. The release of the write
// lock ends the connection's write transaction: a committed one left its
// WAL's buffer empty, so what is in it is a rolled-back transaction's frames.
func dbShmLock(tls *libc.TLS, p uintptr, offset, n, flags int32) int32 {
	f := walFileOf(p)
	if flags == sqlite3.SQLITE_SHM_UNLOCK|sqlite3.SQLITE_SHM_EXCLUSIVE && offset <= walWriteLock && walWriteLock < offset+n && f.link != 0 {
		walFileOf(f.link).drop()
	}
	return walShmLock(tls, p, offset, n, flags)
}

func walRead(tls *libc.TLS, p, data uintptr, amt int32, off int64) int32 {
	f := walFileOf(p)
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&f.io().FxRead)))(tls, f.sub(), data, amt, off)
}

func walTruncate(tls *libc.TLS, p uintptr, size int64) int32 {
	f := walFileOf(p)
	f.commit = 0
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	f.end = -1
	return (*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&f.io().FxTruncate)))(tls, f.sub(), size)
}

func walSync(tls *libc.TLS, p uintptr, flags int32) int32 {
	f := walFileOf(p)
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&f.io().FxSync)))(tls, f.sub(), flags)
}

func walFileSizeOf(tls *libc.TLS, p, size uintptr) int32 {
	f := walFileOf(p)
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&f.io().FxFileSize)))(tls, f.sub(), size)
}

func walFileControl(tls *libc.TLS, p uintptr, op int32, arg uintptr) int32 {
	f := walFileOf(p)
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&f.io().FxFileControl)))(tls, f.sub(), op, arg)
}

// The rest is the base file's, unchanged.

func walLock(tls *libc.TLS, p uintptr, lock int32) int32 {
	f := walFileOf(p)
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&f.io().FxLock)))(tls, f.sub(), lock)
}

func walUnlock(tls *libc.TLS, p uintptr, lock int32) int32 {
	f := walFileOf(p)
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&f.io().FxUnlock)))(tls, f.sub(), lock)
}

func walCheckReservedLock(tls *libc.TLS, p, out uintptr) int32 {
	f := walFileOf(p)
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&f.io().FxCheckReservedLock)))(tls, f.sub(), out)
}

func walSectorSize(tls *libc.TLS, p uintptr) int32 {
	f := walFileOf(p)
	if f.io().FxSectorSize == 0 {
		return 4096
	}
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&f.io().FxSectorSize)))(tls, f.sub())
}

func walDeviceCharacteristics(tls *libc.TLS, p uintptr) int32 {
	f := walFileOf(p)
	if f.io().FxDeviceCharacteristics == 0 {
		return 0
	}
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&f.io().FxDeviceCharacteristics)))(tls, f.sub())
}

// SQLite maps shared memory and pages through the main database file, never
// a WAL; these forward to the base for completeness.

func walShmMap(tls *libc.TLS, p uintptr, pg, size, extend int32, pp uintptr) int32 {
	f := walFileOf(p)
	if f.io().FiVersion < 2 || f.io().FxShmMap == 0 {
		return sqlite3.SQLITE_IOERR
	}
	rc := (*(*func(*libc.TLS, uintptr, int32, int32, int32, uintptr) int32)(unsafe.Pointer(&f.io().FxShmMap)))(tls, f.sub(), pg, size, extend, pp)
	if rc == sqlite3.SQLITE_OK && pg == 0 && f.name != 0 {
		if region := *(*uintptr)(ptr(pp)); region != 0 {
			walIndexMapped(p, libc.GoString(f.name), region)
		}
	}
	return rc
}

func walShmLock(tls *libc.TLS, p uintptr, offset, n, flags int32) int32 {
	f := walFileOf(p)
	if f.io().FiVersion < 2 || f.io().FxShmLock == 0 {
		return sqlite3.SQLITE_IOERR
	}
	return (*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&f.io().FxShmLock)))(tls, f.sub(), offset, n, flags)
}

func walShmBarrier(tls *libc.TLS, p uintptr) {
	f := walFileOf(p)
	if f.io().FiVersion < 2 || f.io().FxShmBarrier == 0 {
		return
	}
	(*(*func(*libc.TLS, uintptr))(unsafe.Pointer(&f.io().FxShmBarrier)))(tls, f.sub())
}

func walShmUnmap(tls *libc.TLS, p uintptr, del int32) int32 {
	f := walFileOf(p)
	walIndexUnmapped(p)
	if f.io().FiVersion < 2 || f.io().FxShmUnmap == 0 {
		return sqlite3.SQLITE_OK
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&f.io().FxShmUnmap)))(tls, f.sub(), del)
}

func walFetch(tls *libc.TLS, p uintptr, off int64, amt int32, pp uintptr) int32 {
	f := walFileOf(p)
	if f.io().FiVersion < 3 || f.io().FxFetch == 0 {
		*(*uintptr)(ptr(pp)) = 0
		return sqlite3.SQLITE_OK
	}
	if rc := f.flush(tls); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int64, int32, uintptr) int32)(unsafe.Pointer(&f.io().FxFetch)))(tls, f.sub(), off, amt, pp)
}

func walUnfetch(tls *libc.TLS, p uintptr, off int64, pg uintptr) int32 {
	f := walFileOf(p)
	if f.io().FiVersion < 3 || f.io().FxUnfetch == 0 {
		return sqlite3.SQLITE_OK
	}
	return (*(*func(*libc.TLS, uintptr, int64, uintptr) int32)(unsafe.Pointer(&f.io().FxUnfetch)))(tls, f.sub(), off, pg)
}
