package model

import "iter"

// History is the earlier part of a conversation that a Request shares with
// its caller: segments of messages, read in order, which nobody may modify.
// An agent hands its history cache's slices (one a stored run) to every
// request of a conversation this way instead of copying them per call.
//
// The zero History is empty. All and Backward yield copies of the messages,
// so assigning to a yielded message's fields changes nothing shared; its
// slices and maps (Parts, ToolCalls, ProviderData, …) are still the shared
// ones and must not be modified. To change messages, Collect a Request and
// send a new one (copy on write).
type History struct {
	segs [][]Message
	n    int
}

// NewHistory returns the messages of segments, in order. It keeps the
// segments (no copy): the caller must not change them, nor their messages,
// while a request holding the History may be in use.
func NewHistory(segments ...[]Message) History {
	n := 0
	for _, s := range segments {
		n += len(s)
	}
	return History{segs: segments, n: n}
}

// Len is the number of messages.
func (h History) Len() int { return h.n }

// All yields the index and a copy of each message, first to last.
func (h History) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		i := 0
		for _, s := range h.segs {
			for j := range s {
				if !yield(i, s[j]) {
					return
				}
				i++
			}
		}
	}
}

// Backward yields the index and a copy of each message, last to first.
func (h History) Backward() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		i := h.n - 1
		for k := len(h.segs) - 1; k >= 0; k-- {
			s := h.segs[k]
			for j := len(s) - 1; j >= 0; j-- {
				if !yield(i, s[j]) {
					return
				}
				i--
			}
		}
	}
}

// appendTo appends copies of the messages to dst.
func (h History) appendTo(dst []Message) []Message {
	for _, s := range h.segs {
		dst = append(dst, s...)
	}
	return dst
}

// Len is the number of messages the request carries: History's and Messages.
func (r *Request) Len() int { return r.History.Len() + len(r.Messages) }

// All yields the request's messages in the order a model reads them:
// History's, then Messages, indexed from 0. See History for what a yielded
// message may not be used for.
func (r *Request) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		for i, m := range r.History.All() {
			if !yield(i, m) {
				return
			}
		}
		n := r.History.Len()
		for j := range r.Messages {
			if !yield(n+j, r.Messages[j]) {
				return
			}
		}
	}
}

// Backward yields the request's messages last to first, with the indexes
// All gives them.
func (r *Request) Backward() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		n := r.History.Len()
		for j := len(r.Messages) - 1; j >= 0; j-- {
			if !yield(n+j, r.Messages[j]) {
				return
			}
		}
		for i, m := range r.History.Backward() {
			if !yield(i, m) {
				return
			}
		}
	}
}

// Collect returns a new slice of the request's messages in order (History's,
// then Messages): the list to change when a wrapper, hook or compressor
// rewrites a conversation. The messages' own slices and maps stay shared.
func (r *Request) Collect() []Message {
	return append(r.History.appendTo(make([]Message, 0, r.Len())), r.Messages...)
}

// HistoryReader is implemented by a Model that reads a Request's History
// (through All, Backward or Collect); every provider of this module does.
// A model without it (one written to read Messages alone) is given the
// request with its History copied into Messages (see For), so it never
// misses the earlier conversation. A wrapper model answers for the model
// it wraps.
type HistoryReader interface {
	ReadsHistory() bool
}

// ReadsHistory reports whether m reads a Request's History.
func ReadsHistory(m Model) bool {
	h, ok := m.(HistoryReader)
	return ok && h.ReadsHistory()
}

// For returns the request as model m is to read it: r itself when m reads
// History or r has none; otherwise a copy of r whose Messages are the whole
// conversation (Collect) and whose History is empty.
func (r *Request) For(m Model) *Request {
	if r.History.Len() == 0 || ReadsHistory(m) {
		return r
	}
	c := *r
	c.Messages, c.History = r.Collect(), History{}
	return &c
}
