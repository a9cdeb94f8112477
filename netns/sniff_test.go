package netns

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// TestSniffNameNoWait: a whole request head is read as soon as it came;
// the sniffer does not wait for a byte more (it did, for sniffWait, on
// every transparent HTTP connection to a bare address). The pipe has no
// deadline, so a sniffer that waits for more never returns.
func TestSniffNameNoWait(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go io.WriteString(client, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
	done := make(chan string, 1)
	go func() {
		name, _ := sniffName(bufio.NewReaderSize(server, maxSniff+1))
		done <- name
	}()
	select {
	case name := <-done:
		if name != "api.test" {
			t.Errorf("name %q, want api.test", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sniffer waits for more than the whole head")
	}
}
