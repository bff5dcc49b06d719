//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// The WAL index header's change counter, read for sqlstore's history cache
// (docs/adr/sqlite-session-cache.md).
//
// SQLite keeps a WAL database's index in shared memory (the -shm file, or
// the process's heap for unix-excl). Its header starts region 0, and the
// header's third 32-bit word, iChange (wal.c, WalIndexHdr), is incremented
// by every commit of any connection of any process, and by the restart of
// the WAL after a checkpoint; a read, a rollback, a checkpoint or a
// transaction that changed nothing leave it alone. So two equal readings
// mean that nothing committed in between.
//
// The writer's VFS sees SQLite map region 0 of the database file
// (walShmMap) and unmap it (walShmUnmap, or the file's close), and records
// the region's address here by the database file's name, as SQLite names it
// (PRAGMA database_list). Every connection of the process to one file maps
// the same memory, so any one mapping will do.

// Offsets in region 0 (WalIndexHdr, wal.c): iChange after iVersion and an
// unused word; mxFrame, the WAL's last valid frame, after isInit,
// bigEndCksum and szPage.
const (
	walIndexChangeOffset  = 8
	walIndexMxFrameOffset = 16
)

// walIndexHeader is one database file's WAL index header while a
// connection of the writer's VFS has it mapped.
type walIndexHeader struct {
	mu sync.Mutex
	// regions are the region 0 addresses by the file that mapped them;
	// cur is one of them (0 when none).
	regions map[uintptr]uintptr
	cur     uintptr
}

// walIndexes finds a file's header by its name (weakly: a header lives
// while a store reads its counter or a connection has it mapped, and its
// name's entry goes with it) and by the database files that map it.
var walIndexes struct {
	mu     sync.Mutex
	byName map[string]weak.Pointer[walIndexHeader]
	byFile map[uintptr]*walIndexHeader
}

// walIndexOf is the header of the database file SQLite names name,
// recorded from now on whenever mapped, for as long as the caller holds it.
func walIndexOf(name string) *walIndexHeader {
	walIndexes.mu.Lock()
	defer walIndexes.mu.Unlock()
	if walIndexes.byName == nil {
		walIndexes.byName = make(map[string]weak.Pointer[walIndexHeader])
		walIndexes.byFile = make(map[uintptr]*walIndexHeader)
	}
	if h := walIndexes.byName[name].Value(); h != nil {
		return h
	}
	h := &walIndexHeader{regions: make(map[uintptr]uintptr, 1)}
	wp := weak.Make(h)
	walIndexes.byName[name] = wp
	runtime.AddCleanup(h, forgetWALIndex, walIndexName{name, wp})
	return h
}

// walIndexName is a header's entry in walIndexes.byName.
type walIndexName struct {
	name string
	wp   weak.Pointer[walIndexHeader]
}

// forgetWALIndex removes a collected header's name, unless a newer header
// of the same file holds it already.
func forgetWALIndex(n walIndexName) {
	walIndexes.mu.Lock()
	defer walIndexes.mu.Unlock()
	if walIndexes.byName[n.name] == n.wp {
		delete(walIndexes.byName, n.name)
	}
}

// walIndexMapped records that file (a database file of the writer's VFS,
// named name) has region 0 of its WAL index at region.
func walIndexMapped(file uintptr, name string, region uintptr) {
	h := walIndexOf(name)
	walIndexes.mu.Lock()
	walIndexes.byFile[file] = h
	walIndexes.mu.Unlock()
	h.mu.Lock()
	h.regions[file] = region
	h.cur = region
	h.mu.Unlock()
}

// walIndexUnmapped forgets file's mapping, before SQLite releases it.
func walIndexUnmapped(file uintptr) {
	walIndexes.mu.Lock()
	h := walIndexes.byFile[file]
	delete(walIndexes.byFile, file)
	walIndexes.mu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.regions, file)
	h.cur = 0
	for _, r := range h.regions {
		h.cur = r
		break
	}
}

// change reads the version: mxFrame in the high 32 bits, iChange in the
// low; ok is false while no connection has the header mapped. The lock
// keeps the mapping from going while it is read. mxFrame tells apart the
// versions of a header SQLite rebuilt after a process died mid-commit
// (recovery starts iChange again), which iChange alone might not. The two
// words are read one after the other: a reading torn by a concurrent commit
// matches no version the cache holds, and only costs a read.
func (h *walIndexHeader) change() (n uint64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == 0 {
		return 0, false
	}
	c := atomic.LoadUint32((*uint32)(ptr(h.cur + walIndexChangeOffset)))
	m := atomic.LoadUint32((*uint32)(ptr(h.cur + walIndexMxFrameOffset)))
	return uint64(m)<<32 | uint64(c), true
}

// changeCounter is the change counter of the writer's database file for
// sqlstore.Config: its WAL index header, found by the file's name as SQLite
// names it.
func changeCounter(ctx context.Context, writer *sql.DB) (func() (uint64, bool), error) {
	var file string
	if err := writer.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		return nil, err
	}
	return walIndexOf(file).change, nil
}
