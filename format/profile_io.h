#pragma once
// Reading, validating and writing the profile (docs/PROFILE.md).

#include <string>

#include "format/profile.h"

namespace trainsim {

// Reads a profile. Throws InputError naming file, line and key on a malformed profile
// (unknown key, wrong type, arrays whose lengths disagree with `batches`, negative times,
// unsupported schema_version). A missing file: InputError with line 0.
Profile load_profile(const std::string& path);

// Serialises to YAML text (deterministic: same struct, same bytes).
std::string profile_to_yaml(const Profile& profile);

// Writes atomically (write_file_atomic: an exclusive temporary file, fsynced, then rename(2)), so
// a reader never sees a torn file.
void write_profile_atomic(const Profile& profile, const std::string& path);

}  // namespace trainsim
