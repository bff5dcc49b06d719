package offload

import (
	"time"

	"github.com/agentryhq/agentry/agentfs"
)

// SetClock moves o's clock seconds ahead of now.
func SetClock(o *Offloader, seconds int) {
	o.now = func() time.Time { return time.Now().Add(time.Duration(seconds) * time.Second) }
}

func NamespaceOf(o *Offloader, s Scope) (string, error) {
	return o.fs.NamespaceOf(agentfs.Scope{SessionID: s.SessionID, UserID: s.UserID})
}

var PageOf = page

func Envelope(o *Offloader, id, tool, result string, stored bool) string {
	return o.envelope(id, tool, result, countLines(result), stored)
}

// SetSearchTime shortens o's bound on one search's scan.
func SetSearchTime(o *Offloader, d time.Duration) { o.searchTime = d }
