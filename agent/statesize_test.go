package agent

import (
	"testing"
	"unsafe"
)

// Every run allocates its state. A state with pointers above 512 bytes
// carries the allocator's 8-byte header, so up to 1,016 bytes fit the
// 1,024-byte size class; the next class is 1,152. A field that only some
// runs need belongs in runExtras.
func TestState_FitsItsSizeClass(t *testing.T) {
	t.Parallel()
	if size := unsafe.Sizeof(state{}); size+8 > 1024 {
		t.Fatalf("agent.state is %d bytes (+8 header > 1,024): move rarely used fields into runExtras", size)
	}
}
