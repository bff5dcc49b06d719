package migratetest

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
)

// Generate yields n agent and team sessions of runsPer runs of about runBytes
// each, deterministically from seed, in session_id order. Team sessions hold
// member runs (parent_run_id = the team run) before their team run.
func Generate(seed uint64, n, runsPer, runBytes int) iter.Seq[Session] {
	return func(yield func(Session) bool) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		const words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
		for i := range n {
			sid := fmt.Sprintf("gen-%08d", i)
			team := i%5 == 4
			s := Session{SessionID: sid, SessionType: "agent", AgentID: "agent-1", UserID: fmt.Sprintf("user-%d", i%97),
				CreatedAt: 1_700_000_000 + int64(i)}
			if team {
				s.SessionType, s.AgentID, s.TeamID = "team", "", "team-1"
			}
			var b strings.Builder
			b.WriteByte('[')
			for j := range runsPer {
				if j > 0 {
					b.WriteString(", ")
				}
				rid := fmt.Sprintf("%s-r%04d", sid, j)
				pad := runBytes - 420
				if pad < 0 {
					pad = 0
				}
				off := rng.IntN(len(words))
				text := strings.Repeat(words, pad/len(words)+2)[off : off+pad]
				owner := `"agent_id": "agent-1", "agent_name": "Agent One"`
				parent := ""
				if team && j%4 == 3 {
					owner = `"team_id": "team-1", "team_name": "Team One"`
				} else if team {
					parent = fmt.Sprintf(`, "parent_run_id": "%s-r%04d"`, sid, j|3)
				}
				fmt.Fprintf(&b, `{"run_id": "%s", %s, "session_id": "%s"%s, "status": "COMPLETED", "created_at": %d, `+
					`"model": "gpt-4o", "model_provider": "OpenAI", "input": {"input_content": "question %d"}, `+
					`"content": "%s", "messages": [{"role": "user", "content": "question %d"}, {"role": "assistant", "content": "answer"}], `+
					`"metrics": {"input_tokens": %d, "output_tokens": %d, "total_tokens": %d}}`,
					rid, owner, sid, parent, s.CreatedAt+int64(j), j, text, j, 10+j, 20+j, 30+2*j)
			}
			b.WriteByte(']')
			s.Runs = []byte(b.String())
			if !yield(s) {
				return
			}
		}
	}
}
