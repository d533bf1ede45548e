package aws

import (
	"context"
	"fmt"
	"log/slog"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// connect builds the SDK clients, reads the identity from IMDS and the
// instance type's limits from EC2.
func (s *Source) connect(ctx context.Context) error {
	awsCfg, err := config.LoadDefaultConfig(ctx, s.loadOptions()...)
	if err != nil {
		return fmt.Errorf("aws source: load SDK config: %w", err)
	}
	meta := metadataReader{client: imds.NewFromConfig(awsCfg, func(o *imds.Options) {
		if s.cfg.IMDSEndpoint != "" {
			o.Endpoint = s.cfg.IMDSEndpoint
		}
		// IMDSv2 only: an instance that requires tokens must not be
		// probed with IMDSv1 requests.
		o.EnableFallback = awssdk.FalseTernary
	})}
	if s.id, err = meta.readIdentity(ctx); err != nil {
		return fmt.Errorf("aws source: identity: %w", err)
	}
	region := s.cfg.Region
	if region == "" {
		region = s.id.region
	}
	client := ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
		o.Region = region
		if s.cfg.EC2Endpoint != "" {
			o.BaseEndpoint = awssdk.String(s.cfg.EC2Endpoint)
		}
	})
	s.ec2 = ec2API{client: client, instanceID: s.id.instanceID}
	if s.limits, err = s.ec2.instanceTypeLimits(ctx, s.id.instanceType); err != nil {
		return fmt.Errorf("aws source: %w", err)
	}
	s.log.Info("instance identity read", slog.String("instance", s.id.instanceID), slog.String("type", s.id.instanceType),
		slog.String("zone", s.id.zone), slog.String("region", region), slog.String("subnet", s.id.primary.subnetID),
		slog.String("subnetCIDR", s.id.primary.subnetCIDR.String()), slog.Any("securityGroups", s.id.primary.securityGroups),
		slog.Int("maxENIs", s.limits.maxENIs), slog.Int("ipv4PerENI", s.limits.ipv4PerENI))
	return nil
}

func (s *Source) loadOptions() []func(*config.LoadOptions) error {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() awssdk.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = s.tun.MaxAttempts
				o.MaxBackoff = s.tun.MaxBackoff
			})
		}),
	}
	if s.cfg.Region != "" {
		opts = append(opts, config.WithRegion(s.cfg.Region))
	}
	if s.opts.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(s.opts.Credentials))
	}
	if s.opts.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(s.opts.HTTPClient))
	}
	return opts
}

// perENI is how many pod addresses one ENI holds: all but its primary.
func (s *Source) perENI() int {
	if s.cfg.EnablePrefixDelegation {
		return s.slotsPerENI() * prefixSize
	}
	return s.limits.ipv4PerENI - 1
}

// slotsPerENI is how many secondary slots (addresses or /28 prefixes) an
// ENI has beside its primary address.
func (s *Source) slotsPerENI() int { return s.limits.ipv4PerENI - 1 }

// maxENIs is the instance type's ENI limit, or Config.MaxENIs below it.
func (s *Source) maxENIs() int {
	if s.cfg.MaxENIs > 0 && s.cfg.MaxENIs < s.limits.maxENIs {
		return s.cfg.MaxENIs
	}
	return s.limits.maxENIs
}
