/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package jsonrpc is the JSON-RPC 2.0 transport to an SPDK application over
// its Unix socket: one connection, many concurrent calls matched by id,
// redialled after SPDK restarts.
package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 60 * time.Second

// Client calls one SPDK application. It is safe for concurrent use.
type Client struct {
	socket string

	mu      sync.Mutex
	conn    *conn // nil until dialled, and again after it broke
	nextID  uint64
	closed  bool
	timeout time.Duration
}

// conn is one connection and the calls waiting for an answer on it.
type conn struct {
	net.Conn
	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[uint64]chan response
	err     error // why the connection broke; set once
}

type request struct {
	Version string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// withID adds the id to an encoded request.
func withID(req []byte, id uint64) []byte {
	return append(fmt.Appendf(nil, `{"id":%d,`, id), req[1:]...)
}

type response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// NewClient returns a client of the SPDK application listening on socket.
// It dials on the first call.
func NewClient(socket string) *Client {
	return &Client{socket: socket, timeout: DefaultTimeout}
}

// Socket is the path of the Unix socket the client calls.
func (c *Client) Socket() string { return c.socket }

// Call sends method with params (omitted when nil) and decodes the answer
// into result (skipped when nil). An SPDK error answer is an *Error. When
// ctx has no deadline, DefaultTimeout applies.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	data, err := json.Marshal(request{Version: "2.0", Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("spdk %s: encode params: %w", method, err)
	}
	// A request whose write failed never reached SPDK, so it is sent once
	// more on a fresh connection: the usual case is the first call after
	// SPDK restarted, on the connection to the old process.
	var (
		cn     *conn
		answer chan response
	)
	for attempt := 0; ; attempt++ {
		var id uint64
		cn, id, err = c.connection(ctx)
		if err != nil {
			return fmt.Errorf("spdk %s: %w", method, err)
		}
		answer = make(chan response, 1)
		if err = cn.register(id, answer); err == nil {
			err = cn.write(ctx, withID(data, id))
			if err == nil {
				defer cn.unregister(id)
				break
			}
			cn.unregister(id)
			c.drop(cn, err)
		}
		if attempt == 1 {
			return fmt.Errorf("spdk %s: %w: %w", method, ErrDisconnected, err)
		}
	}

	select {
	case <-ctx.Done():
		return fmt.Errorf("spdk %s: no answer: %w", method, ctx.Err())
	case r, ok := <-answer:
		if !ok {
			return fmt.Errorf("spdk %s: %w: %w", method, ErrDisconnected, cn.brokenBy())
		}
		if r.Error != nil {
			return &Error{Method: method, Code: r.Error.Code, Message: r.Error.Message}
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(r.Result, result); err != nil {
			return fmt.Errorf("spdk %s: decode result %s: %w", method, r.Result, err)
		}
		return nil
	}
}

// Close closes the connection; later calls fail.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}

// connection returns the live connection, dialling when there is none, and
// the id for the next request.
func (c *Client) connection(ctx context.Context) (*conn, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, 0, errors.New("client closed")
	}
	c.nextID++
	if c.conn != nil {
		return c.conn, c.nextID, nil
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: dial %s: %w", ErrDisconnected, c.socket, err)
	}
	cn := &conn{Conn: nc, pending: map[uint64]chan response{}}
	c.conn = cn
	go c.readLoop(cn)
	return cn, c.nextID, nil
}

// readLoop hands every answer on cn to the call waiting for its id until the
// connection breaks, then fails the waiting calls.
func (c *Client) readLoop(cn *conn) {
	dec := json.NewDecoder(cn)
	for {
		var r response
		if err := dec.Decode(&r); err != nil {
			c.drop(cn, err)
			return
		}
		cn.mu.Lock()
		ch := cn.pending[r.ID]
		delete(cn.pending, r.ID)
		cn.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// drop forgets a broken connection so that the next call redials.
func (c *Client) drop(cn *conn, cause error) {
	c.mu.Lock()
	if c.conn == cn {
		c.conn = nil
	}
	c.mu.Unlock()
	cn.fail(cause)
}

func (cn *conn) register(id uint64, ch chan response) error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil {
		return fmt.Errorf("%w: %w", ErrDisconnected, cn.err)
	}
	cn.pending[id] = ch
	return nil
}

func (cn *conn) unregister(id uint64) {
	cn.mu.Lock()
	delete(cn.pending, id)
	cn.mu.Unlock()
}

func (cn *conn) write(ctx context.Context, data []byte) error {
	cn.writeMu.Lock()
	defer cn.writeMu.Unlock()
	deadline, _ := ctx.Deadline()
	if err := cn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := cn.Write(data)
	return err
}

// fail closes the connection once and wakes every waiting call.
func (cn *conn) fail(cause error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil {
		return
	}
	cn.err = cause
	_ = cn.Close()
	for id, ch := range cn.pending {
		close(ch)
		delete(cn.pending, id)
	}
}

func (cn *conn) brokenBy() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}
