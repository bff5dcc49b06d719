package responses

import "github.com/agentryhq/agentry/model"

// AcceptsURL: the Responses API fetches images (input_image's image_url)
// and files (input_file's file_url) itself; audio and video are not URL
// inputs there.
func (m *Model) AcceptsURL(t model.PartType, _ string) bool {
	return t == model.PartImage || t == model.PartFile
}
