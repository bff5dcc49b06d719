package team

import "github.com/agentryhq/agentry/agent"

// memberStorage passes the team run's offloader and media storage on to a
// member run: a member without its own offloads its oversized tool results
// and stores its media as references like the leader (Agno offloads member
// runs before storing them). The member_responses the team run stores are
// referenced by the leader's own persist.
func memberStorage(rc agent.RunContext) agent.RunOption {
	return agent.WithStorageDefaults(rc.Offloader, rc.MediaStorage)
}
