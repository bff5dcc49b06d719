package trace

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

func serviceName(name string) attribute.KeyValue { return attribute.String("service.name", name) }

// attrBuf is scratch space for the attributes of one Start or
// SetAttributes call. A slice passed to an interface method escapes, so
// building it in place would allocate on every span; the SDK copies what
// it is given, so a pooled buffer can be reused as soon as the call
// returns. Each span then sets its attributes in two calls (at start and at
// end), and the SDK grows its own list once for each.
type attrBuf struct {
	kv   []attribute.KeyValue
	opts [2]oteltrace.SpanStartOption
}

var attrPool = sync.Pool{New: func() any { return &attrBuf{kv: make([]attribute.KeyValue, 0, 16)} }}

func getAttrs() *attrBuf { return attrPool.Get().(*attrBuf) }

func (b *attrBuf) add(kv attribute.KeyValue) { b.kv = append(b.kv, kv) }

// set sets the gathered attributes on span in one call.
func (b *attrBuf) set(span oteltrace.Span) {
	if len(b.kv) > 0 {
		span.SetAttributes(b.kv...)
	}
}

// release returns b to the pool, dropping its references to the span's
// strings; a buffer an unusual span grew large is left to the collector.
func (b *attrBuf) release() {
	if cap(b.kv) > 64 {
		return
	}
	clear(b.kv)
	b.kv = b.kv[:0]
	b.opts = [2]oteltrace.SpanStartOption{}
	attrPool.Put(b)
}

// startOptions are the options of a span of kind with the gathered
// attributes, for the span's start. Valid until release.
func (b *attrBuf) startOptions(kind oteltrace.SpanStartOption) []oteltrace.SpanStartOption {
	b.opts[0], b.opts[1] = kind, oteltrace.WithAttributes(b.kv...)
	return b.opts[:]
}

var (
	kindClient   = oteltrace.WithSpanKind(oteltrace.SpanKindClient)
	kindInternal = oteltrace.WithSpanKind(oteltrace.SpanKindInternal)
)

// finishReasons caches the gen_ai.response.finish_reasons attribute of
// each stop reason seen: a string slice attribute costs an allocation to
// build, and a model answers with a handful of stop reasons. The cache is
// copy-on-write and stops growing at maxFinishReasons (a provider sending
// arbitrary reasons then pays the allocation).
var finishReasons atomic.Pointer[map[string]attribute.KeyValue]

const maxFinishReasons = 32

func finishReason(stop string) attribute.KeyValue {
	cur := finishReasons.Load()
	if cur != nil {
		if kv, ok := (*cur)[stop]; ok {
			return kv
		}
	}
	kv := AttrFinishReasons.StringSlice([]string{stop})
	if cur == nil || len(*cur) < maxFinishReasons {
		next := make(map[string]attribute.KeyValue, 1+lenOf(cur))
		if cur != nil {
			for k, v := range *cur {
				next[k] = v
			}
		}
		next[stop] = kv
		finishReasons.CompareAndSwap(cur, &next) // a lost race only loses this entry
	}
	return kv
}

func lenOf(m *map[string]attribute.KeyValue) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
