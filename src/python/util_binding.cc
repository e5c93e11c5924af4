// The native half of ferry.util (python/ferry/util.py): Mosaic's merge_index, done by the
// library's FindSubIndexes and MergeIndexParts (the code behind `ferry merge-index`), reading
// and writing through any store URL. Python picks the sources and outputs the way Mosaic's
// arguments name them; each function here releases the GIL while it talks to a store, so
// util.py reads many sub-indexes at once from a thread pool.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "ferry/format/merge_index.h"
#include "ferry/storage/registry.h"
#include "format/shard_pattern.h"
#include "python/bindings.h"
#include "python/status_exception.h"
#include "storage/http/http_types.h"
#include "storage/object_key.h"

namespace py = pybind11;

namespace ferry::python {
namespace {

// store.Get(key), given up after `timeout_s` seconds (Mosaic's download_timeout, per file).
Result<std::string> GetWithin(ObjectStore& store, const std::string& key,
                              std::optional<double> timeout_s) {
  if (!timeout_s) return store.Get(key);
  std::stop_source give_up;
  bool timed_out = false;
  Result<std::string> text = InternalError("not read");
  {
    Mutex mu;
    std::condition_variable_any cv;
    std::jthread timer([&](std::stop_token done) {
      MutexLock lock(mu);
      // Wakes early only when the read is over (the jthread is stopped as it goes out of scope).
      cv.wait_for(lock, done, std::chrono::duration<double>(*timeout_s), [] { return false; });
      if (!done.stop_requested()) {
        timed_out = true;
        give_up.request_stop();
      }
    });
    text = store.Get(key, give_up.get_token());
  }
  if (!text && timed_out) {
    return DeadlineExceededError(fmt::format("{}: not read within download_timeout = {} s",
                                             http::RedactUrl(store.ToUrl(key)), *timeout_s));
  }
  return text;
}

// The sub-indexes below `root` that merge_index takes, as (path relative to root, folder).
Result<std::vector<SubIndex>> FindSubIndexesAt(const std::string& root) {
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey at, OpenUrl(root));
  const std::string prefix = FolderKey(at.key);
  FERRY_ASSIGN_OR_RETURN(const ListResult listing, at.store->List(prefix, /*recursive=*/true));
  std::vector<std::string> files;
  for (const ObjectInfo& obj : listing.objects) files.push_back(obj.key.substr(prefix.size()));
  std::string name = http::RedactUrl(root);
  while (name.size() > 1 && name.ends_with('/')) name.pop_back();
  auto found = FindSubIndexes(std::move(files), name);
  if (!found && found.error().code() == StatusCode::kNotFound && listing.objects.empty()) {
    return NotFoundError(
        fmt::format("{} (nothing is there: does it exist?)", found.error().message()));
  }
  return found;
}

// One sub-index as MergeIndexParts takes it: its URL (redacted, for messages), the name of the
// folder that holds it (its shards' prefix) and its text.
Result<IndexPart> ReadSubIndex(const std::string& url, std::optional<double> timeout_s) {
  FERRY_ASSIGN_OR_RETURN(const StoreAndKey at, OpenUrl(url));
  std::string_view folder = at.key;
  const size_t last = folder.rfind('/');
  folder = last == std::string_view::npos ? std::string_view() : folder.substr(0, last);
  folder = folder.substr(folder.rfind('/') + 1);  // npos + 1 == 0: the whole of it
  if (folder.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}: a sub-index must sit in a named folder (its name prefixes the shards' basenames)",
        http::RedactUrl(url)));
  }
  FERRY_ASSIGN_OR_RETURN(std::string text, GetWithin(*at.store, at.key, timeout_s));
  return IndexPart{http::RedactUrl(at.store->ToUrl(at.key)), std::string(folder), std::move(text)};
}

// Writes `text` as index.json into every folder, after checking that none holds one already
// (an index is never overwritten, so none is written when one is there).
Status WriteMergedIndex(const std::vector<std::string>& folders, const std::string& text) {
  std::vector<StoreAndKey> targets;
  for (const std::string& folder : folders) {
    FERRY_ASSIGN_OR_RETURN(StoreAndKey at, OpenUrl(folder));
    at.key = FolderKey(at.key) + "index.json";
    auto existing = at.store->Head(at.key);
    if (existing) {
      return AlreadyExistsError(
          fmt::format("{}: already exists; merge_index never overwrites an index",
                      http::RedactUrl(at.store->ToUrl(at.key))));
    }
    if (existing.error().code() != StatusCode::kNotFound) return existing.status();
    targets.push_back(std::move(at));
  }
  for (const StoreAndKey& at : targets) FERRY_RETURN_IF_ERROR(at.store->Put(at.key, text));
  return Status::Ok();
}

template <typename T>
T Blocking(const std::function<Result<T>()>& work) {
  Result<T> result = InternalError("not run");
  {
    py::gil_scoped_release release;
    result = work();
  }
  return Unwrap(std::move(result));
}

}  // namespace

void RegisterUtil(py::module_& m) {
  m.def(
      "shard_selection",
      [](const std::string& url)
          -> std::optional<std::pair<std::string, std::vector<std::string>>> {
        if (!internal_format::IsShardPattern(url)) return std::nullopt;
        internal_format::ShardSelection selection = Unwrap(internal_format::ParseShardPattern(url));
        return std::make_pair(std::move(selection.folder), std::move(selection.shards));
      },
      py::arg("url"),
      "For a WebDataset shard pattern or '::' list of tars (s3://b/train-{000..127}.tar): "
      "(the folder's URL, the shard names in order); None for any other URL. ValueError for "
      "a pattern ferry does not read (unbalanced braces, several folders).");
  m.def(
      "find_sub_indexes",
      [](const std::string& root) {
        std::vector<std::pair<std::string, std::string>> out;
        for (SubIndex& sub :
             Blocking<std::vector<SubIndex>>([&] { return FindSubIndexesAt(root); }))
          out.emplace_back(std::move(sub.path), std::move(sub.folder));
        return out;
      },
      py::arg("root"),
      "The index.json files below ROOT (a path or URL) that merge_index takes: (path relative to "
      "ROOT, folder name) in path order. AlreadyExistsError when ROOT holds index.json itself.");
  m.def(
      "read_sub_index",
      [](const std::string& url, std::optional<double> timeout_s) {
        IndexPart part = Blocking<IndexPart>([&] { return ReadSubIndex(url, timeout_s); });
        return std::make_tuple(part.origin, part.folder, py::bytes(part.text));
      },
      py::arg("url"), py::arg("timeout_s") = py::none(),
      "The index.json at URL as merge_index_parts takes it: (URL redacted, name of the folder "
      "holding it, its bytes); DeadlineExceededError after timeout_s seconds.");
  m.def(
      "merge_index_parts",
      [](const std::vector<std::tuple<std::string, std::string, std::string>>& parts) {
        std::vector<IndexPart> in;
        for (const auto& [origin, folder, text] : parts) in.push_back({origin, folder, text});
        const MergedIndex merged = Blocking<MergedIndex>([&] { return MergeIndexParts(in); });
        return std::make_pair(py::bytes(merged.text), merged.shards);
      },
      py::arg("parts"),
      "Merges (origin, folder, index.json bytes) in order, as Mosaic's merge_index does: "
      "(merged index.json bytes, number of shards).");
  m.def(
      "write_merged_index",
      [](const std::vector<std::string>& folders, const std::string& text) {
        Status status;
        {
          py::gil_scoped_release release;
          status = WriteMergedIndex(folders, text);
        }
        ThrowIfError(status);
      },
      py::arg("folders"), py::arg("text"),
      "Writes TEXT as index.json into each folder (paths or URLs); AlreadyExistsError, with "
      "nothing written, when one of them holds an index.json.");
}

}  // namespace ferry::python
