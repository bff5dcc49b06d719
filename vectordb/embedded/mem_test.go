package embedded

import "runtime"

type runtimeMem struct{ heapMB int }

func (m *runtimeMem) read() {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.heapMB = int(s.HeapInuse >> 20)
}
