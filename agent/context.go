package agent

import (
	"strings"
	"time"
)

// contextInfo is the system message's per-run <additional_information>
// block: the current time (AddDatetimeToContext, in Timezone), the location
// (AddLocationToContext) and the agent's name (AddNameToContext), in Agno's
// wording. Empty when none is asked for or SystemMessage replaces the system
// message.
func (a *Agent) contextInfo(clock func() time.Time) string {
	c := a.conf()
	if c.SystemMessage != "" || (!c.AddDatetimeToContext && !c.AddLocationToContext && !c.AddNameToContext) {
		return ""
	}
	var b strings.Builder
	b.WriteString("<additional_information>\n")
	if c.AddDatetimeToContext {
		now := clock() // read only when asked for, not on every run
		if loc := a.timezone; loc != nil {
			now = now.In(loc)
		}
		b.WriteString("- The current time is " + now.Format("2006-01-02 15:04:05.000000-07:00") + ".\n")
	}
	if c.AddLocationToContext {
		b.WriteString("- Your approximate location is: " + c.Location + ".\n")
	}
	if c.AddNameToContext && c.Name != "" {
		b.WriteString("- Your name is: " + c.Name + ".\n")
	}
	b.WriteString("</additional_information>")
	return b.String()
}
