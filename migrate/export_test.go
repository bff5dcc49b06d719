package migrate

// SetStopAt makes Down call f at the named points of its drop of the runs
// table ("before runs drop", "after runs drop"); an error f returns stops
// Down there, as a crash would.
func SetStopAt(m *Manager, f func(point string) error) { m.stopAt = f }
