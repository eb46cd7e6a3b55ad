// Safe writes: the one way Strata writes a file. Data goes to a temporary file in the target's
// folder, is flushed and fsynced, then renamed over the target, so a crash, a kill or a full disk
// leaves either the old file or the complete new one, never a mix. A target that is the same
// file (inode) as one of the run's inputs, or that this process has open or mapped, is refused
// before anything is written; so is a target that is not a regular file (a directory, a device).
// The temporary file is removed on failure, on SIGINT/SIGTERM (temp_files.h), and on the next
// write to the same target if a killed process left it.
// Not thread-safe per writer; different writers may run on different threads.
#pragma once

#include <fstream>
#include <string>
#include <string_view>

namespace strata {

class AtomicFileWriter {
  public:
    // Checks the target (see above) and creates the temporary file. `what` names the file in
    // messages ("plan file", "chat save"). Throws ArgumentError for a refused target and
    // SystemError when the folder cannot be written.
    AtomicFileWriter(const std::string& path, std::string_view what);
    // Without commit(): the temporary file is removed and the target left as it was.
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    std::ostream& stream() { return out_; }
    void write(std::string_view bytes);  // throws SystemError when the write fails
    // Flushes, fsyncs, renames over the target and fsyncs the folder. Throws SystemError (the
    // target untouched) on any failure: a full disk, a file size limit, an I/O error.
    void commit();

    const std::string& path() const { return path_; }

  private:
    std::string path_;  // the target, symbolic links resolved
    std::string tmp_;
    std::string what_;
    std::ofstream out_;
    int slot_ = -1;  // temp_files.h registration
    bool committed_ = false;
};

// The whole file in one call.
void write_file_atomic(const std::string& path, std::string_view bytes, std::string_view what);

// Records a file the run reads (a model, a plan, a text), so that no later write replaces it.
// Files read through bounded_read.h and models opened by the GGUF reader are noted already.
// A path that does not exist is ignored.
void note_input_file(const std::string& path);

// Throws ArgumentError when `path` names a file the run may not write over (an input, a file this
// process has open or mapped, something that is not a regular file). Called by the writer; public
// so that a command can refuse a bad target before it starts long work.
void check_write_target(const std::string& path, std::string_view what);

}  // namespace strata
