// Package bedrock is the AWS Bedrock provider on the Converse and
// ConverseStream APIs: requests signed with SigV4 and credentials from the AWS
// default chain (aws-sdk-go-v2), streams read in AWS event-stream framing.
package bedrock
