// Package media owns media offloading: the Storage contract (local disk,
// S3), content-hashed keys scoped to an owner (database, user, session), and
// the media_reference that replaces an image, audio clip, video or file's
// bytes in a stored run.
package media
