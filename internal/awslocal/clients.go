package awslocal

import (
	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Credentials are static keys the servers accept (they only check that a
// request is signed). Using them keeps the SDK from looking for real ones.
func Credentials() awssdk.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIAAWSLOCALEXAMPLE", "awslocal-secret", "")
}

// EC2Client returns a real SDK client for this Cloud's EC2 server, with one
// attempt per call so tests see every error as the server sent it.
func (c *Cloud) EC2Client(optFns ...func(*ec2.Options)) *ec2.Client {
	opts := ec2.Options{
		Region:       c.opts.Region,
		BaseEndpoint: awssdk.String(c.EC2Endpoint()),
		Credentials:  Credentials(),
		Retryer:      retry.AddWithMaxAttempts(retry.NewStandard(), 1),
	}
	return ec2.New(opts, optFns...)
}

// IMDSClient returns a real SDK client for this Cloud's IMDS server, IMDSv2
// only.
func (c *Cloud) IMDSClient() *imds.Client {
	return imds.New(imds.Options{Endpoint: c.IMDSEndpoint(), EnableFallback: awssdk.FalseTernary})
}
