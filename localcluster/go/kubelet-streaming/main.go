// Command kubelet-streaming is the streaming server of the local cluster's process kubelet
// (localcluster/kubelet/server.py), as a container runtime's is the kubelet's: the kubelet authorizes
// /exec and /portForward and proxies the upgraded connection here (pkg/kubelet/server/server.go proxyStream), and
// this serves it with Kubernetes' own streaming packages, k8s.io/kubelet/pkg/cri/streaming (SPDY/3.1, which
// kube-apiserver 1.35 speaks to the kubelet, translating kubectl's WebSocket: k8s.io/apiserver/pkg/util/proxy
// streamtranslator.go for exec, streamtunnel.go for port-forward).
//
// It listens on a Unix socket only the kubelet reaches (--socket). Each request carries the pod's container as the
// kubelet resolved it in the header X-Localcluster-Target (JSON, set by the kubelet, never by a client): the
// environment, working directory and uid/gid a command of that container runs with, and the pod's address and the
// session ids of its processes, where a forwarded port is dialled. A command runs in a session of its own, killed
// when its connection closes or when the kubelet asks (POST /kill/{pod uid}: the pod's processes ended).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"k8s.io/apimachinery/pkg/types"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/kubelet/pkg/cri/streaming/portforward"
	remotecommandserver "k8s.io/kubelet/pkg/cri/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

const (
	targetHeader = "X-Localcluster-Target"
	// the kubelet's defaults: streamingConnectionIdleTimeout (KubeletConfiguration) and the stream creation timeout
	idleTimeout           = 4 * time.Hour
	streamCreationTimeout = remotecommandconsts.DefaultStreamCreationTimeout
	version               = "kubelet-streaming (k8s.io/kubelet v0.35.4 pkg/cri/streaming)"
)

// target is one container of a pod as the kubelet resolved it (localcluster/kubelet/containers.py Spec).
type target struct {
	Pod      string   `json:"pod"` // namespace/name
	UID      string   `json:"uid"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	User     *[2]int  `json:"user"` // uid, gid; null: this process's
	Address  string   `json:"address"`
	Sessions []int    `json:"sessions"` // the session ids of the pod's processes (each container's run leads one)
}

func parseTarget(req *http.Request) (*target, error) {
	var t target
	if err := json.Unmarshal([]byte(req.Header.Get(targetHeader)), &t); err != nil {
		return nil, fmt.Errorf("%s: %v", targetHeader, err)
	}
	return &t, nil
}

// running holds the commands running per pod uid, for /kill/{uid}.
var running = struct {
	sync.Mutex
	pods map[string]map[*exec.Cmd]bool
}{pods: map[string]map[*exec.Cmd]bool{}}

// track records a started command of the pod; the returned func forgets it.
func track(pod string, c *exec.Cmd) func() {
	running.Lock()
	defer running.Unlock()
	if running.pods[pod] == nil {
		running.pods[pod] = map[*exec.Cmd]bool{}
	}
	running.pods[pod][c] = true
	return func() {
		running.Lock()
		defer running.Unlock()
		delete(running.pods[pod], c)
		if len(running.pods[pod]) == 0 {
			delete(running.pods, pod)
		}
	}
}

// kill ends every command running in the pod (each its session) with SIGKILL, as a container's end ends the
// commands exec'd in it: each exec then reports exit code 137.
func kill(pod string) int {
	running.Lock()
	defer running.Unlock()
	for c := range running.pods[pod] {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	return len(running.pods[pod])
}

// killAll ends every command running (the kubelet stops: its containers' processes go with it, and so do these).
func killAll() {
	running.Lock()
	pods := make([]string, 0, len(running.pods))
	for pod := range running.pods {
		pods = append(pods, pod)
	}
	running.Unlock()
	for _, pod := range pods {
		kill(pod)
	}
}

// lookPath finds argv0 on the container's PATH (exec.LookPath would search this process's).
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	path := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			path = kv[5:]
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, argv0)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", argv0)
}

func (t *target) ExecInContainer(ctx context.Context, name string, uid types.UID, container string, cmd []string,
	in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	if len(cmd) == 0 {
		return errors.New("no command")
	}
	path, err := lookPath(cmd[0], t.Env)
	if err != nil {
		return err
	}
	c := exec.CommandContext(ctx, path, cmd[1:]...)
	c.Args[0] = cmd[0]
	c.Env, c.Dir = t.Env, t.Dir
	c.WaitDelay = 2 * time.Second // a child left holding the output pipes does not hold the exec open
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// the connection gone (kubectl's, or the kubelet's when the pod's processes end): the command's session goes,
	// as an exec's processes go with their container
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	if t.User != nil && os.Geteuid() == 0 {
		c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(t.User[0]), Gid: uint32(t.User[1]), Groups: []uint32{}}
	}
	if tty {
		err = runTTY(c, t.UID, in, out, resize)
	} else {
		err = run(c, t.UID, in, out, errOut)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code := exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal()) // as a container runtime reports a command killed by a signal
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

func run(c *exec.Cmd, pod string, in io.Reader, out, errOut io.Writer) error {
	if in != nil {
		// a pipe, not c.Stdin = in: Wait would wait for the client's stdin to close after the command ended
		w, err := c.StdinPipe()
		if err != nil {
			return err
		}
		go func() {
			_, _ = io.Copy(w, in)
			_ = w.Close()
		}()
	}
	if out != nil {
		c.Stdout = out
	}
	if errOut != nil {
		c.Stderr = errOut
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer track(pod, c)()
	return c.Wait()
}

func runTTY(c *exec.Cmd, pod string, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	c.SysProcAttr.Setctty = true
	var size *pty.Winsize
	select { // kubectl sends its terminal's size first: the command starts with it, not 0x0
	case first, ok := <-resize:
		if ok {
			size = &pty.Winsize{Rows: first.Height, Cols: first.Width}
		}
	case <-time.After(time.Second):
	}
	tty, err := pty.StartWithAttrs(c, size, c.SysProcAttr)
	if err != nil {
		return err
	}
	defer tty.Close()
	defer track(pod, c)()
	go func() {
		for size := range resize {
			_ = pty.Setsize(tty, &pty.Winsize{Rows: size.Height, Cols: size.Width})
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(tty, in) }()
	}
	copied := make(chan struct{})
	go func() {
		if out != nil {
			_, _ = io.Copy(out, tty) // ends with EIO once the command and its children are gone
		}
		close(copied)
	}()
	err = c.Wait()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	return err
}

// PortForward dials the pod's address; where nothing listens there, the address a process of the pod listens on
// (a server bound to 127.0.0.1, which in a real pod is the pod's own loopback).
func (t *target) PortForward(ctx context.Context, name string, uid types.UID, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	var d net.Dialer
	addr := net.JoinHostPort(t.Address, strconv.Itoa(int(port)))
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		own, found := listener(int(port), t.Sessions)
		if !found {
			return fmt.Errorf("pod %s: nothing listens on port %d (dialled %s: %v)", t.Pod, port, addr, err)
		}
		if own == "" {
			own = addr
		}
		if conn, err = d.DialContext(ctx, "tcp", own); err != nil {
			return fmt.Errorf("pod %s: port %d: %v", t.Pod, port, err)
		}
	}
	defer conn.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, err = io.Copy(stream, conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("pod %s: port %d: %v", t.Pod, port, err)
	}
	return nil
}

// listener finds a listening TCP socket on port that a process of the pod's sessions holds (/proc/net/tcp{,6},
// /proc/PID/fd): its address ("" for a wildcard), and whether there is one.
func listener(port int, sessions []int) (string, bool) {
	inodes := map[string]string{} // socket inode -> address
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			host, p, ok := strings.Cut(fields[1], ":")
			if n, err := strconv.ParseInt(p, 16, 32); !ok || err != nil || int(n) != port {
				continue
			}
			inodes[fields[9]] = procAddress(host, port)
		}
		file.Close()
	}
	if len(inodes) == 0 {
		return "", false
	}
	ours := map[int]bool{}
	for _, s := range sessions {
		ours[s] = true
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || !ours[session(pid)] {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if addr, ok := inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")]; ok {
				return addr, true
			}
		}
	}
	return "", false
}

// session is the session id of pid (/proc/PID/stat, field 6), or -1.
func session(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // after the command name: state, ppid, pgrp, session
	if len(fields) < 4 {
		return -1
	}
	sid, err := strconv.Atoi(fields[3])
	if err != nil {
		return -1
	}
	return sid
}

// procAddress is host:port for /proc/net/tcp's little-endian hex address; "" for a wildcard address.
func procAddress(hex string, port int) string {
	b := make([]byte, 0, 16)
	for i := 0; i+8 <= len(hex); i += 8 {
		w, err := strconv.ParseUint(hex[i:i+8], 16, 32)
		if err != nil {
			return ""
		}
		b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	ip := net.IP(b)
	if ip.IsUnspecified() {
		return ""
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

// watched is the response whose connection, once hijacked for the upgrade, cancels the request's context when it
// is closed or can no longer be read (kubectl's side gone, or the kubelet's): ServeExec runs the command under that
// context, which a hijacked connection's end does not cancel by itself.
type watched struct {
	http.ResponseWriter
	cancel context.CancelFunc
}

type watchedReader struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (w watchedReader) Read(b []byte) (int, error) {
	n, err := w.r.Read(b)
	if err != nil {
		w.cancel()
	}
	return n, err
}

// watchedConn cancels when the SPDY connection closes it (spdystream ends its read loop on the client's GOAWAY,
// which kube-apiserver sends when kubectl's side is gone, before any read sees the end of the connection).
type watchedConn struct {
	net.Conn
	cancel context.CancelFunc
}

func (c watchedConn) Close() error {
	c.cancel()
	return c.Conn.Close()
}

func (w watched) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response cannot be hijacked")
	}
	conn, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	// what the server's reader holds is read first, then the connection: all through watchedReader
	return watchedConn{conn, w.cancel}, bufio.NewReadWriter(bufio.NewReader(watchedReader{rw.Reader, w.cancel}), rw.Writer), nil
}

func serve(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	req = req.WithContext(ctx)
	w = watched{w, cancel}
	if pod, ok := strings.CutPrefix(req.URL.Path, "/kill/"); ok && req.Method == http.MethodPost {
		fmt.Fprintf(w, "killed %d\n", kill(pod))
		return
	}
	t, err := parseTarget(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case parts[0] == "exec" && (len(parts) == 4 || len(parts) == 5):
		opts, err := remotecommandserver.NewOptions(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		remotecommandserver.ServeExec(w, req, t, t.Pod, types.UID(t.UID), parts[len(parts)-1],
			req.URL.Query()["command"], opts, idleTimeout, streamCreationTimeout,
			remotecommandconsts.SupportedStreamingProtocols)
	case parts[0] == "portForward" && (len(parts) == 3 || len(parts) == 4):
		opts, err := portforward.NewV4Options(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		portforward.ServePortForward(w, req, t, t.Pod, types.UID(t.UID), opts, idleTimeout, streamCreationTimeout,
			portforward.SupportedProtocols)
	default:
		http.NotFound(w, req)
	}
}

func main() {
	socket := flag.String("socket", "", "the Unix socket to listen on (created; mode 0600)")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}
	if *socket == "" {
		fmt.Fprintln(os.Stderr, "kubelet-streaming: --socket is required")
		os.Exit(2)
	}
	_ = os.Remove(*socket)
	l, err := net.Listen("unix", *socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelet-streaming: %v\n", err)
		os.Exit(1)
	}
	_ = os.Chmod(*socket, 0o600)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		killAll()
		_ = os.Remove(*socket)
		os.Exit(0)
	}()
	fmt.Println("serving on", *socket) // the kubelet waits for this line
	server := &http.Server{Handler: http.HandlerFunc(serve), ReadHeaderTimeout: 30 * time.Second}
	if err := server.Serve(l); err != nil {
		fmt.Fprintf(os.Stderr, "kubelet-streaming: %v\n", err)
		os.Exit(1)
	}
}
