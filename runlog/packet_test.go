package runlog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/runlog"
)

// TestAppend_ManyEventsLargerTogetherThanAPacket: events each within
// max_allowed_packet but larger together than it are stored by one Append
// on MySQL/MariaDB. The driver sends a value inline in the statement's
// packet up to a share of the packet size it assumes (64 MiB unless the
// DSN says otherwise), which is above a server's 4 MiB (MySQL 5.7, Aurora
// v2) or 16 MiB (MariaDB): 100 events of 200 KB in one INSERT were one
// packet the server refused, and the recorder wrote that batch again and
// again, the run's later events behind it.
func TestAppend_ManyEventsLargerTogetherThanAPacket(t *testing.T) {
	t.Parallel()
	mc, _ := mysqlDatabase(t)
	mc.MaxAllowedPacket = 1 << 30 // the driver inlines values up to 1 GiB / (params + 1)
	ctx := context.Background()
	l := openMySQLLog(t, mc)
	var evs []runlog.Pending
	for range 150 {
		evs = append(evs, runlog.Pending{Event: "RunContent", Data: []byte(`"` + strings.Repeat("x", 200<<10) + `"`)})
	}
	if err := l.Append(ctx, "run-1", 1, evs, nil); err != nil {
		t.Fatalf("append: %v", err)
	}
	if n, err := l.Count(ctx, "run-1"); err != nil || n != int64(len(evs)) {
		t.Fatalf("%d events stored (%v), want %d", n, err, len(evs))
	}
}
