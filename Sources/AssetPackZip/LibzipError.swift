#if SystemLibraries  // the default configuration only (libzip)
import AssetPackCore
internal import CLibzip

/// Maps libzip error codes to AssetPack's stable error codes. Every libzip failure goes
/// through here, so the mapping lives in one place.
enum LibzipError {
    /// - Parameters:
    ///   - zipCode: libzip's `ZIP_ER_*` code.
    ///   - system: The errno (or zlib code) libzip recorded with it; `zip_error_strerror` appends
    ///     its text ("Write error: No space left on device"). Never read `errno` here: by the time
    ///     an error is mapped, later calls (cleanup, unlink) may have changed it.
    static func make(_ zipCode: Int32, system: Int32 = 0, path: String? = nil, context: String) -> AssetPackError {
        var err = zip_error_t()
        zip_error_init(&err)
        zip_error_set(&err, zipCode, system)
        var text = String(cString: zip_error_strerror(&err))
        if system == 0 && zip_error_system_type(&err) == ZIP_ET_SYS, let cut = text.range(of: ": ", options: .backwards)
        {
            text = String(text[..<cut.lowerBound])  // no recorded errno: drop strerror(0)'s "Success"
        }
        zip_error_fini(&err)
        let code: AssetPackError.Code
        switch zipCode {
        case ZIP_ER_NOPASSWD: code = .missingPassword
        case ZIP_ER_WRONGPASSWD: code = .wrongPassword
        case ZIP_ER_NOENT: code = path == nil ? .io : .entryNotFound
        case ZIP_ER_NOZIP, ZIP_ER_COMPNOTSUPP, ZIP_ER_ENCRNOTSUPP, ZIP_ER_MULTIDISK, ZIP_ER_OPNOTSUPP:
            code = .unsupportedFormat
        case ZIP_ER_CRC, ZIP_ER_INCONS, ZIP_ER_ZLIB, ZIP_ER_EOF: code = .integrityFailure
        case ZIP_ER_OPEN, ZIP_ER_READ, ZIP_ER_SEEK, ZIP_ER_WRITE, ZIP_ER_CLOSE, ZIP_ER_TMPOPEN,
            ZIP_ER_RENAME, ZIP_ER_REMOVE, ZIP_ER_TELL:
            // A short read inside an entry means a truncated archive, not an OS failure.
            code = (zipCode == ZIP_ER_READ && path != nil) ? .integrityFailure : .io
        default: code = .integrityFailure
        }
        var message = "\(context): \(text)"
        if code == .missingPassword { message = "entry is encrypted and no password was given" }
        if code == .wrongPassword { message = "wrong password" }
        if zipCode == ZIP_ER_NOZIP { message = "not a zip archive or AssetPack container" }
        return AssetPackError(code, message, path: path, underlying: .libzip(zipCode))
    }

    static func from(_ error: UnsafeMutablePointer<zip_error_t>, path: String?, context: String) -> AssetPackError {
        make(zip_error_code_zip(error), system: zip_error_code_system(error), path: path, context: context)
    }
}
#endif
