package agentos

import (
	"net/http"
	"strconv"
)

func (s *Server) getHealth(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{
		"status":          "ok",
		"instantiated_at": strconv.FormatFloat(float64(s.startedAt.UnixMicro())/1e6, 'f', 6, 64),
	})
}
