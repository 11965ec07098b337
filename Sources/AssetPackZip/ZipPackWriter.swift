import AssetPackCore
internal import CLibzip
import Foundation

/// Writes zip packs with libzip: WinZip AES-256 by default, ZipCrypto or no encryption on
/// request. Entry names are stored as UTF-8 with the UTF-8 flag set.
///
/// libzip writes to a temporary file beside the output and renames it into place when the
/// archive closes, so a failed pack never leaves a torn file under the output name.
package struct ZipPackWriter: PackWriter {
    /// Creates a writer.
    package init() {}

    /// Writes `files` as a zip pack at `output`.
    /// - Throws: `.missingPassword` when encryption is requested without a password,
    ///   `.invalidArgument` for a raw key, `.io` when writing fails.
    @discardableResult
    package func write(_ files: [SourceFile], to output: String, options: PackOptions) throws -> PackWriteReport {
        let password: String?
        switch (options.zip.encryption, options.credential) {
        case (.none, _): password = nil
        case (_, .password(let p)?): password = p
        case (_, .key?): throw AssetPackError(.invalidArgument, "zip packs take a password, not a raw key")
        case (_, nil): throw AssetPackError(.missingPassword, "a password is needed to encrypt the pack")
        }
        try ReadLimits.default.checkPackable(files)
        if let password, password.isEmpty {
            throw AssetPackError(.invalidArgument, "the password is empty")
        }
        let method: UInt16 =
            switch options.zip.encryption {
            case .aes256: UInt16(ZIP_EM_AES_256)
            case .zipCrypto: UInt16(ZIP_EM_TRAD_PKWARE)
            case .none: UInt16(ZIP_EM_NONE)
            }

        var code: Int32 = 0
        guard let za = zip_open(output, ZIP_CREATE | ZIP_TRUNCATE, &code) else {
            throw LibzipError.make(code, system: errno, context: "cannot create \(output)")
        }
        var closed = false
        defer { if !closed { zip_discard(za) } }

        for (n, file) in files.enumerated() {
            var error = zip_error_t()
            zip_error_init(&error)
            defer { zip_error_fini(&error) }
            guard let source = zip_source_file_create(file.url.path, 0, -1, &error) else {
                throw LibzipError.from(&error, path: nil, context: "cannot read \(file.url.path)")
            }
            let index = zip_file_add(za, file.path, source, zip_flags_t(ZIP_FL_ENC_UTF_8))
            guard index >= 0 else {
                zip_source_free(source)
                throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot add \(file.path)")
            }
            let deflate = try options.compression.shouldDeflate(file)
            guard zip_set_file_compression(za, UInt64(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) == 0,
                zip_file_set_encryption(za, UInt64(index), method, password) == 0
            else {
                throw LibzipError.from(zip_get_error(za), path: nil, context: "cannot configure \(file.path)")
            }
            options.progress?(PackProgress(done: n, total: files.count, path: file.path))
        }

        // libzip compresses and encrypts everything inside zip_close; report its progress.
        let box = ProgressBox(options.progress, total: files.count)
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
        return PackWriteReport(packed: files.count)
    }
}

private final class ProgressBox {
    let callback: (@Sendable (PackProgress) -> Void)?
    let total: Int
    init(_ callback: (@Sendable (PackProgress) -> Void)?, total: Int) {
        self.callback = callback
        self.total = total
    }
    func report(_ fraction: Double) {
        callback?(PackProgress(done: Int(fraction * Double(total)), total: total, path: "writing"))
    }
}
