package model_test

import (
	"context"
	"iter"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// legacyModel reads Messages alone, as a model written before
// Request.History did.
type legacyModel struct{}

func (legacyModel) Info() model.Info { return model.Info{ID: "legacy"} }
func (legacyModel) Invoke(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{}, nil
}
func (legacyModel) Stream(context.Context, *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(func(*model.Chunk, error) bool) {}
}

// readerModel declares that it reads History.
type readerModel struct{ legacyModel }

func (readerModel) ReadsHistory() bool { return true }

func TestRequestFor(t *testing.T) {
	hist := []model.Message{{Role: model.RoleSystem, Content: "sys"}, {Role: model.RoleUser, Content: "earlier", FromHistory: true}}
	req := &model.Request{History: model.NewHistory(hist[:1], hist[1:]), Messages: []model.Message{{Role: model.RoleUser, Content: "now"}}, ToolChoice: "auto"}

	if got := req.For(readerModel{}); got != req {
		t.Fatal("a model that reads History got a copy of the request")
	}
	if got := model.WithRetry(readerModel{}, model.RetryConfig{MaxAttempts: 2}); req.For(got) != req {
		t.Fatal("a retrying wrapper of a History reader does not answer for it")
	}
	for _, m := range []model.Model{legacyModel{}, model.WithRetry(legacyModel{}, model.RetryConfig{MaxAttempts: 2})} {
		got := req.For(m)
		if got == req || got.History.Len() != 0 || got.ToolChoice != "auto" {
			t.Fatalf("%T: request %+v, want a copy with an empty History", m, got)
		}
		want := []model.Message{hist[0], hist[1], req.Messages[0]}
		if !reflect.DeepEqual(got.Messages, want) {
			t.Fatalf("%T: Messages %+v, want the whole conversation %+v", m, got.Messages, want)
		}
	}
	if req.History.Len() != 2 || len(req.Messages) != 1 {
		t.Fatal("For changed the request it was given")
	}
	plain := &model.Request{Messages: req.Messages}
	if plain.For(legacyModel{}) != plain {
		t.Fatal("a request without History was copied")
	}
}
