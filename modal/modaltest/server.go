// Package modaltest is a loopback stand-in for Modal's servers: the
// control plane and the task command router, implemented on the SDK's own
// generated gRPC server interfaces. A sandbox is a directory on this
// machine; an exec is a real process started there. It checks tokens and
// hands out expiring auth tokens and router JWTs as Modal does, can make
// the first task-id lookups after a create fail the way a just-created
// Modal sandbox does, and records every request.
package modaltest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Config sets up a Server.
type Config struct {
	// TokenID and TokenSecret are the only accepted credentials.
	TokenID, TokenSecret string
	// Dir holds the sandboxes' and images' directories.
	Dir string
	// NotReady is how many task-id lookups of each new sandbox answer
	// with no task id, as a sandbox still being scheduled does.
	NotReady int
	// TokenTTL is the auth tokens' lifetime; zero is an hour.
	TokenTTL time.Duration
	// CutStdioAfter, when positive, ends every stdout/stderr stream with
	// Unavailable once it has sent that many bytes, as a dropped
	// connection does; the client resumes from its offset.
	CutStdioAfter int
	// LoseStdinAckEvery, when positive, answers every n-th stdin write
	// with Unavailable after applying it, as a reply lost in transit; the
	// client sends it again at the same offset.
	LoseStdinAckEvery int
}

// Request is one recorded call.
type Request struct {
	Method string
	Body   string // the request message, in protobuf text form (see recordedData)
}

// recordedData is how much of a stdin write's data a recorded request
// keeps: commands and their environments travel in small writes, while
// a binary copied into a sandbox comes in 1 MiB writes whose text form,
// kept for every call, once cost a test more time and memory than the
// copy itself.
const recordedData = 64 << 10

// Server is the fake. Stop ends it and every process it started.
type Server struct {
	pb.UnimplementedModalClientServer
	pb.UnimplementedTaskCommandRouterServer

	cfg Config
	lis net.Listener
	gs  *grpc.Server

	mu        sync.Mutex
	seq       int
	requests  []Request
	tokens    map[string]time.Time // auth token → expiry
	jwts      map[string]string    // router JWT → task id
	apps      map[string]string    // name → app id
	images    map[string]string    // image id → directory ("" for a base image)
	secrets   map[string]map[string]string
	sandboxes map[string]*sandbox // by sandbox id
	tasks     map[string]*sandbox // by task id
	stdinN    int                 // stdin writes answered, for LoseStdinAckEvery
}

// Start listens on 127.0.0.1:0 (plaintext) and serves.
func Start(cfg Config) (*Server, error) {
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = time.Hour
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, lis: lis,
		tokens: map[string]time.Time{}, jwts: map[string]string{}, apps: map[string]string{},
		images: map[string]string{}, secrets: map[string]map[string]string{},
		sandboxes: map[string]*sandbox{}, tasks: map[string]*sandbox{},
	}
	s.gs = grpc.NewServer(grpc.ChainUnaryInterceptor(s.unaryAuth), grpc.ChainStreamInterceptor(s.streamAuth))
	pb.RegisterModalClientServer(s.gs, s)
	pb.RegisterTaskCommandRouterServer(s.gs, s)
	go s.gs.Serve(lis) // returns when Stop stops the server
	return s, nil
}

// URL is the server's address in MODAL_SERVER_URL's form.
func (s *Server) URL() string { return "http://" + s.lis.Addr().String() }

// Stop kills every sandbox's processes and stops serving.
func (s *Server) Stop() {
	s.mu.Lock()
	for _, sb := range s.sandboxes {
		sb.terminate()
	}
	s.mu.Unlock()
	s.gs.Stop()
}

// Requests is a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Requested returns the bodies of the recorded calls of method
// ("SandboxCreate").
func (s *Server) Requested(method string) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Method == method {
			out = append(out, r.Body)
		}
	}
	return out
}

// Terminate ends sandbox id as Modal does when it is stopped from
// elsewhere (the dashboard, its timeout).
func (s *Server) Terminate(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[id]
	if sb == nil {
		return fmt.Errorf("no sandbox %s", id)
	}
	sb.terminate()
	return nil
}

// Running lists the sandboxes that have not ended.
func (s *Server) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, sb := range s.sandboxes {
		if !sb.ended() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%06d", prefix, s.seq)
}

func (s *Server) record(method string, req any) {
	body := ""
	if w, ok := req.(*pb.TaskExecStdinWriteRequest); ok && len(w.GetData()) > recordedData {
		short := proto.CloneOf(w)
		short.SetData(fmt.Appendf(w.GetData()[:recordedData:recordedData], "... (%d bytes in all)", len(w.GetData())))
		req = short
	}
	if m, ok := req.(proto.Message); ok {
		body = prototext.Format(m)
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: method, Body: body})
	s.mu.Unlock()
}

// unaryAuth checks credentials the way each service does: the router by
// its JWT, the control plane by token id and secret plus (except for
// AuthTokenGet) an unexpired auth token.
func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	s.record(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:], req)
	if err := s.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	s.record(info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:], nil)
	if err := s.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

func (s *Server) authorize(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	get := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(method, "/modal.task_command_router.") {
		if _, ok := s.jwts[strings.TrimPrefix(get("authorization"), "Bearer ")]; !ok {
			return status.Error(codes.Unauthenticated, "invalid or missing router JWT")
		}
		return nil
	}
	if get("x-modal-token-id") != s.cfg.TokenID || get("x-modal-token-secret") != s.cfg.TokenSecret {
		return status.Error(codes.Unauthenticated, "Token ID or secret is invalid")
	}
	if method == "/modal.client.ModalClient/AuthTokenGet" {
		return nil
	}
	exp, ok := s.tokens[get("x-modal-auth-token")]
	if !ok || time.Now().After(exp) {
		return status.Error(codes.Unauthenticated, "auth token missing or expired")
	}
	return nil
}

// jwt is an unsigned token with an exp claim, in the shape the SDK
// parses.
func jwt(id string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(fmt.Appendf(nil, `{"sub":%q,"exp":%d}`, id, exp.Unix())) + ".sig"
}

// AuthTokenGet hands out an auth token that expires after TokenTTL.
func (s *Server) AuthTokenGet(ctx context.Context, req *pb.AuthTokenGetRequest) (*pb.AuthTokenGetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp := time.Now().Add(s.cfg.TokenTTL)
	tok := jwt(s.nextID("tok"), exp)
	s.tokens[tok] = exp
	return pb.AuthTokenGetResponse_builder{Token: tok}.Build(), nil
}

// AppGetOrCreate finds or makes the app by name.
func (s *Server) AppGetOrCreate(ctx context.Context, req *pb.AppGetOrCreateRequest) (*pb.AppGetOrCreateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.apps[req.GetAppName()]
	if !ok {
		if req.GetObjectCreationType() != pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_IF_MISSING {
			return nil, status.Errorf(codes.NotFound, "App '%s' not found", req.GetAppName())
		}
		id = s.nextID("ap")
		s.apps[req.GetAppName()] = id
	}
	return pb.AppGetOrCreateResponse_builder{AppId: id}.Build(), nil
}

// ImageGetOrCreate "builds" a registry image at once: its filesystem is
// this machine's, so the image is an empty directory.
func (s *Server) ImageGetOrCreate(ctx context.Context, req *pb.ImageGetOrCreateRequest) (*pb.ImageGetOrCreateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID("im")
	s.images[id] = ""
	return pb.ImageGetOrCreateResponse_builder{
		ImageId: id,
		Result:  pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS}.Build(),
	}.Build(), nil
}

// ImageFromId finds an image by id.
func (s *Server) ImageFromId(ctx context.Context, req *pb.ImageFromIdRequest) (*pb.ImageFromIdResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.images[req.GetImageId()]; !ok {
		return nil, status.Errorf(codes.NotFound, "Image %s not found", req.GetImageId())
	}
	return pb.ImageFromIdResponse_builder{ImageId: req.GetImageId()}.Build(), nil
}

// DeleteImage forgets image id, as an expired or deleted Modal image.
func (s *Server) DeleteImage(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.images, id)
}

// SecretGetOrCreate stores an ephemeral secret (the SDK's way of sending
// an env map).
func (s *Server) SecretGetOrCreate(ctx context.Context, req *pb.SecretGetOrCreateRequest) (*pb.SecretGetOrCreateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID("st")
	s.secrets[id] = req.GetEnvDict()
	return pb.SecretGetOrCreateResponse_builder{SecretId: id}.Build(), nil
}

// SandboxCreate makes the sandbox's directory, filled from a snapshot
// image when the image is one.
func (s *Server) SandboxCreate(ctx context.Context, req *pb.SandboxCreateRequest) (*pb.SandboxCreateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	def := req.GetDefinition()
	src, ok := s.images[def.GetImageId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Image %s not found", def.GetImageId())
	}
	id := s.nextID("sb")
	dir := filepath.Join(s.cfg.Dir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if src != "" {
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	env := map[string]string{}
	for _, sid := range def.GetSecretIds() {
		for k, v := range s.secrets[sid] {
			env[k] = v
		}
	}
	sb := newSandbox(id, s.nextID("ta"), req.GetAppId(), dir, env, s.cfg.NotReady, time.Now())
	s.sandboxes[id] = sb
	s.tasks[sb.taskID] = sb
	return pb.SandboxCreateResponse_builder{SandboxId: id}.Build(), nil
}

func (s *Server) sandbox(id string) (*sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[id]
	if sb == nil {
		return nil, status.Errorf(codes.NotFound, "Sandbox %s not found", id)
	}
	return sb, nil
}

func (s *Server) task(id string) (*sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.tasks[id]
	if sb == nil {
		return nil, status.Errorf(codes.NotFound, "Task %s not found", id)
	}
	return sb, nil
}

// SandboxGetTaskId answers with no task id while the sandbox is "still
// scheduling" (Config.NotReady lookups), then with its task.
func (s *Server) SandboxGetTaskId(ctx context.Context, req *pb.SandboxGetTaskIdRequest) (*pb.SandboxGetTaskIdResponse, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.notReady > 0 {
		sb.notReady--
		return pb.SandboxGetTaskIdResponse_builder{}.Build(), nil
	}
	b := pb.SandboxGetTaskIdResponse_builder{TaskId: &sb.taskID}
	if sb.result != nil {
		b.TaskResult = sb.result
	}
	return b.Build(), nil
}

// TaskGetCommandRouterAccess gives the router's address (this server,
// https in name: the SDK speaks plaintext to a localhost control plane's
// router) and a JWT for the task.
func (s *Server) TaskGetCommandRouterAccess(ctx context.Context, req *pb.TaskGetCommandRouterAccessRequest) (*pb.TaskGetCommandRouterAccessResponse, error) {
	if _, err := s.task(req.GetTaskId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := jwt(req.GetTaskId(), time.Now().Add(s.cfg.TokenTTL))
	s.jwts[tok] = req.GetTaskId()
	return pb.TaskGetCommandRouterAccessResponse_builder{Jwt: tok, Url: "https://" + s.lis.Addr().String()}.Build(), nil
}

// SandboxWait waits up to the request's timeout for the sandbox to end.
func (s *Server) SandboxWait(ctx context.Context, req *pb.SandboxWaitRequest) (*pb.SandboxWaitResponse, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.GetTimeout()*float32(time.Second)))
	defer cancel()
	select {
	case <-sb.done:
	case <-ctx.Done():
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return pb.SandboxWaitResponse_builder{Result: sb.result}.Build(), nil
}

// SandboxTerminate ends the sandbox and kills its processes.
func (s *Server) SandboxTerminate(ctx context.Context, req *pb.SandboxTerminateRequest) (*pb.SandboxTerminateResponse, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	sb.terminate()
	return pb.SandboxTerminateResponse_builder{}.Build(), nil
}

// SandboxTagsSet replaces the sandbox's tags.
func (s *Server) SandboxTagsSet(ctx context.Context, req *pb.SandboxTagsSetRequest) (*emptypb.Empty, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.tags = map[string]string{}
	for _, t := range req.GetTags() {
		sb.tags[t.GetTagName()] = t.GetTagValue()
	}
	return &emptypb.Empty{}, nil
}

// SandboxList lists running sandboxes with all the requested tags, newest
// first, before the request's timestamp.
func (s *Server) SandboxList(ctx context.Context, req *pb.SandboxListRequest) (*pb.SandboxListResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.SandboxInfo
	for id, sb := range s.sandboxes {
		sb.mu.Lock()
		match := sb.result == nil && (req.GetAppId() == "" || req.GetAppId() == sb.appID)
		for _, t := range req.GetTags() {
			match = match && sb.tags[t.GetTagName()] == t.GetTagValue()
		}
		created := float64(sb.created.UnixNano()) / 1e9
		if before := req.GetBeforeTimestamp(); before > 0 && created >= before {
			match = false
		}
		sb.mu.Unlock()
		if match {
			out = append(out, pb.SandboxInfo_builder{Id: id, CreatedAt: created, AppId: sb.appID}.Build())
		}
	}
	sortNewestFirst(out)
	return pb.SandboxListResponse_builder{Sandboxes: out}.Build(), nil
}

// SandboxSnapshotFs copies the sandbox's directory into a new image.
func (s *Server) SandboxSnapshotFs(ctx context.Context, req *pb.SandboxSnapshotFsRequest) (*pb.SandboxSnapshotFsResponse, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	id := s.nextID("im")
	s.mu.Unlock()
	dst := filepath.Join(s.cfg.Dir, "images", id)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.CopyFS(dst, os.DirFS(sb.dir)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.mu.Lock()
	s.images[id] = dst
	s.mu.Unlock()
	return pb.SandboxSnapshotFsResponse_builder{
		ImageId: id,
		Result:  pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS}.Build(),
	}.Build(), nil
}

// Dir is sandbox id's directory on this machine ("" for none).
func (s *Server) Dir(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.sandboxes[id]; sb != nil {
		return sb.dir
	}
	return ""
}
