package bus

import (
	"fmt"
	"sync"
	"testing"

	"github.com/kkloud/rlab/operators/trace"
)

func TestBusNeverBlocksAndCountsDrops(t *testing.T) {
	b := New()
	small := b.Subscribe(3)
	big := b.Subscribe(100)
	for i := range 10 {
		b.Publish(trace.Event{Kind: trace.Log, Payload: trace.Message{Msg: fmt.Sprint(i)}})
	}
	evs, dropped := small.Drain()
	if len(evs) != 3 || dropped != 7 {
		t.Fatalf("small: %d events, %d dropped; want 3, 7", len(evs), dropped)
	}
	if m0, _ := evs[0].Message(); m0.Msg != "7" {
		t.Fatalf("small keeps the newest, oldest first: %v %v", evs[0].Payload, evs[2].Payload)
	}
	if m2, _ := evs[2].Message(); m2.Msg != "9" {
		t.Fatalf("small keeps the newest, oldest first: %v %v", evs[0].Payload, evs[2].Payload)
	}
	evs, dropped = big.Drain()
	if len(evs) != 10 || dropped != 0 || evs[0].Time.IsZero() {
		t.Fatalf("big: %d events, %d dropped", len(evs), dropped)
	}
	if evs, dropped := big.Drain(); len(evs) != 0 || dropped != 0 {
		t.Fatal("drain empties")
	}
	select {
	case <-big.Wait():
	default:
		t.Fatal("Wait has no value after a publish")
	}
	big.Close()
	b.Publish(trace.Event{Kind: trace.Log})
	if evs, _ := big.Drain(); len(evs) != 0 {
		t.Fatal("closed subscriber still receives")
	}
}

func TestBusConcurrentPublishers(t *testing.T) {
	b := New()
	s := b.Subscribe(1 << 16)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				b.Publish(trace.Event{Kind: trace.Log})
			}
		})
	}
	wg.Wait()
	evs, dropped := s.Drain()
	if len(evs)+dropped != 8000 {
		t.Fatalf("%d events + %d dropped != 8000", len(evs), dropped)
	}
}
