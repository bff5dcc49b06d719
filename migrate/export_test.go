package migrate

// SetAfterRunsDrop makes Down call f right after it drops the runs table;
// an error f returns stops Down there, as a crash would.
func SetAfterRunsDrop(m *Manager, f func() error) { m.afterRunsDrop = f }
