#include "cli/folder_writer.h"

#include <fmt/format.h>

#include <cctype>
#include <utility>

#include "ferry/format/mds_writer.h"
#include "format/webdataset_writer.h"

namespace ferry::cli {
namespace {

class MdsFolderWriter : public FolderWriter {
 public:
  explicit MdsFolderWriter(const FolderWriterOptions& o, std::unique_ptr<MdsWriter> writer)
      : with_data_(o.with_data),
        with_label_(o.with_label),
        with_path_(o.with_path),
        writer_(std::move(writer)) {}

  Status Write(const FolderFile& file, std::string data) override {
    // The stored column order is sorted: data < label < path.
    values_.clear();
    if (with_data_) values_.emplace_back(Bytes{std::move(data)});
    if (with_label_) values_.emplace_back(file.label);
    if (with_path_) values_.emplace_back(file.relative);
    return writer_->WriteValues(values_);
  }
  Result<DatasetDescription> Finish() override { return writer_->Finish(); }

 private:
  bool with_data_, with_label_, with_path_;
  std::unique_ptr<MdsWriter> writer_;
  std::vector<Value> values_;
};

class WebDatasetFolderWriter : public FolderWriter {
 public:
  WebDatasetFolderWriter(const FolderWriterOptions& o,
                         std::unique_ptr<internal_format::WebDatasetWriter> writer)
      : with_data_(o.with_data), with_label_(o.with_label), writer_(std::move(writer)) {}

  Status Write(const FolderFile& file, std::string data) override {
    // WebDataset's split of a member name: the key runs to the first dot of the last component.
    const size_t name = file.relative.rfind('/') + 1;  // npos + 1 == 0
    const size_t dot = file.relative.find('.', name);
    if (dot == std::string::npos || dot == name || dot + 1 == file.relative.size()) {
      return InvalidArgumentError(fmt::format(
          "{}: WebDataset names a sample's field by the file's extension, and this name has "
          "none (or nothing before it)",
          file.relative));
    }
    std::string key = file.relative.substr(0, dot);
    std::string field = file.relative.substr(dot + 1);
    for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key != key_) {
      FERRY_RETURN_IF_ERROR(Flush());
      key_ = std::move(key);
      if (with_label_) fields_.emplace_back("cls", fmt::format("{}", file.label));
    }
    if (with_data_) fields_.emplace_back(std::move(field), std::move(data));
    return Status::Ok();
  }

  Result<DatasetDescription> Finish() override {
    FERRY_RETURN_IF_ERROR(Flush());
    return writer_->Finish();
  }

 private:
  // Writes the sample gathered for key_, if any.
  Status Flush() {
    if (key_.empty()) return Status::Ok();
    std::vector<internal_format::WebDatasetFieldData> views;
    for (const auto& [name, bytes] : fields_) views.emplace_back(name, bytes);
    Status s = writer_->Write(key_, views);
    fields_.clear();
    key_.clear();
    return s;
  }

  bool with_data_, with_label_;
  std::unique_ptr<internal_format::WebDatasetWriter> writer_;
  std::string key_;  // of the sample being gathered; empty before the first file
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace

Result<std::unique_ptr<FolderWriter>> FolderWriter::Create(FolderWriterOptions o) {
  if (o.to == "webdataset") {
    if (!o.with_data && !o.with_label) {
      return InvalidArgumentError(
          "--to webdataset: a sample's fields are its files (data) and its class (label); "
          "--columns names neither");
    }
    FERRY_ASSIGN_OR_RETURN(auto writer,
                           internal_format::WebDatasetWriter::Create(
                               {.out = o.out,
                                .size_limit = o.size_limit.value_or(UINT64_MAX),  // none: one
                                .exist_ok = o.exist_ok,
                                .on_shard_written = o.on_shard_written}));
    return std::unique_ptr<FolderWriter>(new WebDatasetFolderWriter(o, std::move(writer)));
  }
  MdsWriterOptions mds;
  mds.out = o.out;
  if (o.with_data) mds.columns.emplace_back("data", o.encoding);
  if (o.with_label) mds.columns.emplace_back("label", "int");
  if (o.with_path) mds.columns.emplace_back("path", "str");
  mds.compression = o.compression;
  mds.hashes = o.hashes;
  mds.size_limit = o.size_limit;
  mds.exist_ok = o.exist_ok;
  mds.on_shard_written = o.on_shard_written;
  FERRY_ASSIGN_OR_RETURN(auto writer, MdsWriter::Create(std::move(mds)));
  return std::unique_ptr<FolderWriter>(new MdsFolderWriter(o, std::move(writer)));
}

}  // namespace ferry::cli
