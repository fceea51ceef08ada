package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func msgBatchRequest(id, model string) anthropic.MessageBatchNewParamsRequest {
	return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
		Model: model, MaxTokens: 4,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}}
}

func TestMessageBatchesOnTheClockThroughSDK(t *testing.T) {
	clk := fakeclock.New()
	s := startSim(t, oneAnthropic(func(d *Deployment) { d.Key = "k" }), WithClock(clk))
	ep := s.Deployments()[0]
	client := anthropicClient(ep)
	ctx := context.Background()
	b, err := client.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
		msgBatchRequest("a", ep.Deployment), msgBatchRequest("b", "claude-other"),
	}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if b.ProcessingStatus != "in_progress" || b.RequestCounts.Processing != 2 || !strings.HasPrefix(b.ID, "msgbatch_01") {
		t.Fatalf("batch = %+v", b)
	}
	if owner, _ := s.ObjectOwner(b.ID); owner != "d1" {
		t.Errorf("owner = %q", owner)
	}
	stream := client.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
	if stream.Next() || stream.Err() == nil {
		t.Error("results of a batch in progress should be an error")
	}
	clk.Advance(time.Second)
	got, err := client.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
	if err != nil || got.ProcessingStatus != "in_progress" || got.RequestCounts.Succeeded != 1 || got.RequestCounts.Processing != 1 {
		t.Errorf("after 1s: %v %+v", err, got)
	}
	clk.Advance(time.Second)
	got, err = client.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
	if err != nil || got.ProcessingStatus != "ended" || got.RequestCounts.Succeeded != 1 || got.RequestCounts.Errored != 1 || !strings.HasSuffix(got.ResultsURL, "/v1/messages/batches/"+b.ID+"/results") {
		t.Fatalf("after 2s: %v %+v", err, got)
	}
	stream = client.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
	var results []string
	for stream.Next() {
		r := stream.Current()
		results = append(results, r.CustomID+":"+string(r.Result.Type))
		if r.Result.Type == "succeeded" && (r.Result.Message.StopReason != "max_tokens" || len(r.Result.Message.Content) == 0) {
			t.Errorf("succeeded message = %+v", r.Result.Message)
		}
	}
	if err := stream.Err(); err != nil || strings.Join(results, ",") != "a:succeeded,b:errored" {
		t.Errorf("results = %v, err %v", results, err)
	}

	other, err := client.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{
		msgBatchRequest("x", ep.Deployment), msgBatchRequest("y", ep.Deployment),
	}})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := client.Messages.Batches.Cancel(ctx, other.ID, anthropic.MessageBatchCancelParams{})
	if err != nil || cancelled.ProcessingStatus != "canceling" {
		t.Fatalf("Cancel: %v %+v", err, cancelled)
	}
	clk.Advance(time.Second)
	got, err = client.Messages.Batches.Get(ctx, other.ID, anthropic.MessageBatchGetParams{})
	if err != nil || got.ProcessingStatus != "ended" || got.RequestCounts.Canceled != 2 {
		t.Errorf("after cancel: %v %+v", err, got)
	}
	page, err := client.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{})
	if err != nil || len(page.Data) != 2 || page.Data[0].ID != other.ID {
		t.Errorf("List: %v %+v", err, page)
	}
	if _, err := client.Messages.Batches.Delete(ctx, b.ID, anthropic.MessageBatchDeleteParams{}); err != nil {
		t.Errorf("Delete of an ended batch: %v", err)
	}
	if _, err := client.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); err == nil {
		t.Error("Get after Delete found the batch")
	}
	busy, err := client.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{msgBatchRequest("z", ep.Deployment)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Messages.Batches.Delete(ctx, busy.ID, anthropic.MessageBatchDeleteParams{}); err == nil {
		t.Error("Delete of a batch in progress succeeded")
	}
}
