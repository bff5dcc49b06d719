package config

// Schedules configures the cron scheduler (Agno 3.0's scheduler). In YAML:
//
//	schedules:
//	  enabled: true            # fire the schedules of /schedules (needs queue.durable: true)
//	  poll_interval: 15        # seconds between reads of due schedules
//	  catch_up: latest         # missed firings after downtime: latest (one), all, skip
//	  max_catch_up: 10         # with catch_up: all, firings per schedule and poll
//	  misfire_grace_seconds: 0 # with catch_up: skip, how late a firing may be (0: 2×poll_interval, ≥ 60 s)
//
// Each firing is a durable background run, so enabled needs the durable
// queue; the /schedules routes are served either way (trigger answers 503
// while the scheduler is off).
type Schedules struct {
	Enabled             bool    `yaml:"enabled"`
	PollInterval        float64 `yaml:"poll_interval"`
	CatchUp             string  `yaml:"catch_up"`
	MaxCatchUp          int     `yaml:"max_catch_up"`
	MisfireGraceSeconds float64 `yaml:"misfire_grace_seconds"`
}

// validate refuses bad values, settings that would be ignored, and a
// scheduler without the durable queue it fires through.
func (s Schedules) validate(q Queue, bad func(string, ...any)) {
	switch s.CatchUp {
	case "", "latest", "all", "skip":
	default:
		bad("schedules.catch_up %q is not latest, all or skip", s.CatchUp)
	}
	if s.PollInterval < 0 || s.MaxCatchUp < 0 || s.MisfireGraceSeconds < 0 {
		bad("schedules.poll_interval, max_catch_up and misfire_grace_seconds must not be negative")
	} else {
		badSeconds(bad, "schedules.poll_interval", s.PollInterval)
		badSeconds(bad, "schedules.misfire_grace_seconds", s.MisfireGraceSeconds)
	}
	if s.PollInterval != 0 && s.PollInterval < 0.01 {
		bad("schedules.poll_interval must be at least 0.01 seconds")
	}
	if !s.Enabled {
		if s.PollInterval != 0 || s.CatchUp != "" || s.MaxCatchUp != 0 || s.MisfireGraceSeconds != 0 {
			bad("schedules.* settings apply to a running scheduler only: set schedules.enabled: true (or remove them)")
		}
		return
	}
	if !q.Durable {
		bad("schedules.enabled needs queue.durable: true: each firing is a durable background run (sqlite or postgres)")
	}
	if s.MaxCatchUp != 0 && s.CatchUp != "all" {
		bad("schedules.max_catch_up applies to catch_up: all only")
	}
	if s.MisfireGraceSeconds != 0 && s.CatchUp != "skip" {
		bad("schedules.misfire_grace_seconds applies to catch_up: skip only")
	}
}
