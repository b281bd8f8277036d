package modaltest

import (
	"context"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// ImageDelete deletes an image, as Modal does: an unknown id is
// NotFound, and a sandbox can no longer be made from a deleted one.
func (s *Server) ImageDelete(ctx context.Context, req *pb.ImageDeleteRequest) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.images[req.GetImageId()]; !ok {
		return nil, status.Errorf(codes.NotFound, "Image %s not found", req.GetImageId())
	}
	delete(s.images, req.GetImageId())
	return &emptypb.Empty{}, nil
}

// HasImage reports whether image id exists.
func (s *Server) HasImage(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.images[id]
	return ok
}
