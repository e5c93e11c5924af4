// CredentialTrace: what a credential chain found at each source it considered when it was
// loaded, in order - what `ferry doctor --auth` prints. Only names of variables, files and
// endpoints, never a value that could be a secret.
//
// Thread-safety: a value; not shared.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ferry::internal_storage {

struct CredentialTrace {
  struct Step {
    std::string source;  // "environment", "web identity", "managed identity", ...
    std::string found;   // "AWS_ACCESS_KEY_ID not set", "role arn:... from token file F", ...
  };
  std::vector<Step> steps;
};

/// Adds a step when there is a trace to add to.
inline void TraceStep(CredentialTrace* trace, std::string source, std::string found) {
  if (trace != nullptr) trace->steps.push_back({std::move(source), std::move(found)});
}

}  // namespace ferry::internal_storage
