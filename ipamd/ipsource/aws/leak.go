package aws

import (
	"context"
	"errors"
	"log/slog"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
)

// CleanupLeakedENIs deletes the detached ENIs this node's ipamd created
// (tags TagNode=<this instance> and TagCreatedBy=ipamd, status available)
// and reports how many it deleted. Run does this at start and every
// LeakedENICleanupInterval; ENIs of other nodes and untagged ENIs are never
// touched.
func (s *Source) CleanupLeakedENIs(ctx context.Context) (int, error) {
	if !s.isReady() {
		return 0, ErrNotStarted
	}
	s.adjustMu.Lock()
	defer s.adjustMu.Unlock()
	return s.cleanupLeaked(ctx)
}

func (s *Source) cleanupLeaked(ctx context.Context) (int, error) {
	leaked, err := s.ec2.leakedENIs(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	var errs []error
	for _, ni := range leaked {
		id := awssdk.ToString(ni.NetworkInterfaceId)
		err := s.ec2.deleteENI(ctx, id)
		if err != nil && errorCode(err) != codeENINotFound {
			errs = append(errs, err)
			continue
		}
		deleted++
		s.log.Info("leaked ENI deleted", slog.String("eni", id))
	}
	s.mu.Lock()
	s.state.leakedDeleted += deleted
	s.mu.Unlock()
	return deleted, errors.Join(errs...)
}
