package runlog

// MaxPending is maxPending, for tests.
const MaxPending = maxPending

// MaxData is the largest event JSON the log stores (0: no limit), for tests.
func (l *Log) MaxData() int { return l.maxData() }
