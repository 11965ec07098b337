#if SystemLibraries  // the default configuration only (libzip)
import AssetPackCore
internal import CLibzip
import Foundation

/// ZipCrypto packs through libzip, which compresses and encrypts inside `zip_close`.
///
/// libzip writes its own temporary file (`NAME.XXXXXX`, a name we cannot know) beside the archive
/// it closes and renames it to NAME. So NAME lies in a temporary directory of ours,
/// `.assetpack-tmp-UUID` beside the output, registered with `TemporaryFiles` before it exists: an
/// interrupted pack removes the directory and everything libzip had in it, and a crash leaves only
/// a `.assetpack-tmp-` name for a sweep. The output is replaced by our rename after `fsync`.
enum LibzipZipCryptoWriter {
    static func write(_ files: [SourceFile], to output: String, password: String, options: PackOptions) throws
        -> PackWriteReport
    {
        try AtomicFile.checkTarget(output)
        let folder = AtomicFile.folder(of: output)
        let directory = AtomicFile.temporaryName(in: folder)
        let temporary = directory + "/pack.zip"
        TemporaryFiles.register(directory)  // before it exists: an interrupt removes it
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            TemporaryFiles.forget(directory)
        }
        do { try FileSystem.mkdir(directory, permissions: 0o700) } catch { throw error.io("cannot write \(output)") }
        var code: Int32 = 0
        guard let za = zip_open(temporary, ZIP_CREATE | ZIP_EXCL, &code) else {
            throw LibzipError.make(code, system: errno, context: "cannot create \(output)")
        }
        var closed = false
        defer { if !closed { zip_discard(za) } }
        let total = files.reduce(UInt64(0)) { $0 + $1.size }
        for file in files {
            var error = zip_error_t()
            zip_error_init(&error)
            defer { zip_error_fini(&error) }
            guard let source = zip_source_file_create(file.diskPath, 0, -1, &error) else {
                throw LibzipError.from(&error, path: nil, context: "cannot read \(file.diskPath)")
            }
            let index = zip_file_add(za, file.path, source, zip_flags_t(ZIP_FL_ENC_UTF_8))
            guard index >= 0 else {
                zip_source_free(source)
                throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot add \(file.path)")
            }
            let deflate = try options.compression.decide(file)
            // libzip deflates with zlib: level 1 for `.fast`, 9 (its best) for `.default`.
            let zlibLevel: UInt32 = options.level == .fast ? 1 : 9
            guard
                zip_set_file_compression(
                    za, UInt64(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, deflate ? zlibLevel : 0) == 0,
                zip_file_set_encryption(za, UInt64(index), UInt16(ZIP_EM_TRAD_PKWARE), password) == 0
            else {
                throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot configure \(file.path)")
            }
        }
        // libzip compresses and encrypts everything inside zip_close; report its progress.
        let box = ProgressBox(options.progress, total: files.count, bytes: total)
        let context = Unmanaged.passRetained(box)
        defer { context.release() }
        zip_register_progress_callback_with_state(
            za, 0.01,
            { _, fraction, ud in
                guard let ud else { return }
                Unmanaged<ProgressBox>.fromOpaque(ud).takeUnretainedValue().report(fraction)
            }, nil, context.toOpaque())
        guard zip_close(za) == 0 else {
            throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot write \(output)")
        }
        closed = true
        if let key = options.signingKey {
            let fd: FileDescriptor
            do { fd = try .open(temporary, .readWrite) } catch { throw error.io("cannot open \(temporary)") }
            defer { try? fd.close() }
            try ZipSignature.sign(fd, path: output, key: key, release: try options.release(for: output))
        }
        do {
            let fd = try FileDescriptor.open(temporary, .readOnly)
            try fd.closeAfter { () throws(Errno) in try fd.fsync() }
        } catch { throw error.io("cannot sync \(temporary)") }
        do { try FileSystem.rename(temporary, to: output) } catch { throw error.io("cannot rename into \(output)") }
        do {
            let dir = try FileDescriptor.open(folder, .readOnly, options: .directory)
            try dir.closeAfter { () throws(Errno) in try dir.fsync() }
        } catch { throw error.io("cannot sync \(folder)") }
        return PackWriteReport(packed: files.count)
    }
}

/// Hands libzip's progress (a fraction, from `zip_close`) to a pack's progress callback.
private final class ProgressBox {
    let callback: (@Sendable (PackProgress) -> Void)?
    let total: Int
    let bytes: UInt64
    init(_ callback: (@Sendable (PackProgress) -> Void)?, total: Int, bytes: UInt64) {
        self.callback = callback
        self.total = total
        self.bytes = bytes
    }
    func report(_ fraction: Double) {
        callback?(
            PackProgress(
                done: Int(fraction * Double(total)), total: total, path: "writing",
                bytesDone: UInt64(fraction * Double(bytes)), bytesTotal: bytes))
    }
}
#endif
