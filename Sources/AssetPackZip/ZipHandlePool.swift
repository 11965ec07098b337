import AssetPackCore
#if SystemLibraries
internal import CLibzip
#endif
import Foundation

/// The reader's access to the pack's bytes: reads of the ``ByteSource`` (all the directory and
/// every AES or unencrypted entry need), and, in the default configuration, libzip handles for
/// the entries libzip decodes (ZipCrypto, `Decoder.libzip`), opened on the first such read.
///
/// libzip's `zip_t` is not thread-safe. Rather than serialise every read behind one lock,
/// the reader keeps a pool of `zip_t` handles over the *same* ``ByteSource``: each handle reads
/// it through a libzip function source of its own (its own position; the source's reads are
/// `pread`-like, so they share nothing else). A read borrows a handle, uses it alone, and
/// returns it; the pool grows to the number of threads reading at once. Every byte libzip
/// reads goes through the source: a remote source sees (and fetches) them like the reader's own.
final class ZipHandlePool: @unchecked Sendable {
    let source: any ByteSource
    #if SystemLibraries
    private let lock = NSLock()
    private var idle: [Handle] = []
    private var opened = 0

    /// One `zip_t` and the context its function source reads through.
    private struct Handle {
        let archive: OpaquePointer
        let context: LibzipSourceContext
    }
    #endif

    /// How many records our parser found, which a libzip handle's directory must hold too (set
    /// once the directory is parsed, before any handle is opened).
    var expectedRecords: Int?

    init(source: any ByteSource) { self.source = source }

    #if SystemLibraries
    deinit {
        for handle in idle { zip_discard(handle.archive) }
    }

    /// How many `zip_t` handles were opened (each parses the central directory once).
    var handlesOpened: Int { lock.withLock { opened } }

    /// Opens one more `zip_t` over the source.
    private func makeHandle() throws -> Handle {
        let context = LibzipSourceContext(source)
        var error = zip_error_t()
        zip_error_init(&error)
        defer { zip_error_fini(&error) }
        let unmanaged = Unmanaged.passRetained(context)
        guard let zipSource = zip_source_function_create(byteSourceCallback, unmanaged.toOpaque(), &error) else {
            unmanaged.release()
            throw LibzipError.from(&error, path: source.name, context: "cannot open \(source.name)")
        }
        guard let archive = zip_open_from_source(zipSource, ZIP_RDONLY, &error) else {
            zip_source_free(zipSource)  // calls ZIP_SOURCE_FREE, which releases the context
            if let failure = context.takeError() { throw failure }
            throw LibzipError.from(&error, path: source.name, context: "cannot open \(source.name)")
        }
        // libzip finds its own end record and directory; a zip that holds two (which our parser
        // and libzip may choose between differently) must not get past here with two counts.
        let found = zip_get_num_entries(archive, 0)
        if let expected = expectedRecords, found != Int64(expected) {
            zip_discard(archive)
            throw AssetPackError(
                .integrityFailure,
                "libzip finds \(found) records in the central directory, our parser \(expected): the zip holds another directory than the one checked",
                path: source.name)
        }
        lock.withLock { opened += 1 }
        return Handle(archive: archive, context: context)
    }

    /// Runs `body` with a handle no other thread is using. When libzip failed because the
    /// source did (a server's error, a cancellation), that error is thrown rather than the
    /// read error libzip made of it.
    ///
    /// With `confinedTo`, every byte libzip reads meanwhile must lie in that range (the entry's
    /// local header and data, as our parser checked them), or the read fails with
    /// `.integrityFailure`: libzip finds entries by index in the directory it parsed itself, so
    /// a zip holding a second directory could otherwise have it decode another entry's bytes
    /// under this entry's name (with a CRC-32 forged to match, successfully).
    func withHandle<T>(
        confinedTo confined: (range: Range<UInt64>, path: String)? = nil, _ body: (OpaquePointer) throws -> T
    )
        throws -> T
    {
        let reused = lock.withLock { idle.popLast() }
        let handle = try reused ?? makeHandle()
        handle.context.confined = confined
        defer {
            handle.context.confined = nil
            lock.withLock { idle.append(handle) }
        }
        do {
            let result = try body(handle.archive)
            _ = handle.context.takeError()
            return result
        } catch {
            throw handle.context.takeError() ?? error
        }
    }
    #endif

    /// Reads exactly `count` bytes at `offset`.
    /// - Throws: `.integrityFailure` when the pack ends first, and what the source throws.
    func read(at offset: UInt64, count: Int) throws -> [UInt8] { try ZipStructure.reader(source)(offset, count) }

    /// Fills `buffer` from `offset` or up to the end of the pack.
    /// - Returns: The bytes read, fewer than `buffer.count` only at the end of the pack.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try source.read(into: buffer, at: offset)
    }
}

#if SystemLibraries
/// What a libzip function source over a ``ByteSource`` keeps: its position, libzip's error, and
/// the source's own error for the caller.
final class LibzipSourceContext: @unchecked Sendable {
    let source: any ByteSource
    var position: UInt64 = 0
    let zipError: UnsafeMutablePointer<zip_error_t>
    private var sourceError: (any Error)?
    /// The bytes libzip may read now, and the entry they are (``ZipHandlePool/withHandle(confinedTo:_:)``).
    var confined: (range: Range<UInt64>, path: String)?

    init(_ source: any ByteSource) {
        self.source = source
        zipError = .allocate(capacity: 1)
        zip_error_init(zipError)
    }

    deinit {
        zip_error_fini(zipError)
        zipError.deallocate()
    }

    /// Records the source's error (libzip gets a read error).
    func fail(_ error: any Error) {
        sourceError = error
        zip_error_set(zipError, ZIP_ER_READ, EIO)
    }

    /// The source's last error, cleared.
    func takeError() -> (any Error)? {
        defer { sourceError = nil }
        return sourceError
    }
}

/// The commands a read-only, seekable function source answers (libzip's
/// `ZIP_SOURCE_SUPPORTS_SEEKABLE`, which Swift cannot import).
private let seekableCommands: Int64 = [
    ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
    ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_SUPPORTS,
].reduce(0) { $0 | (Int64(1) << Int64($1.rawValue)) }

/// libzip's function-source callback: reads, seeks and stats a ``ByteSource`` (`zip_source_function`).
private let byteSourceCallback: zip_source_callback = { userdata, data, length, command in
    let context = Unmanaged<LibzipSourceContext>.fromOpaque(userdata!).takeUnretainedValue()
    let size = context.source.size
    switch command {
    case ZIP_SOURCE_OPEN:
        context.position = 0
        return 0
    case ZIP_SOURCE_READ:
        let want = Int(min(length, size - min(context.position, size)))
        guard want > 0, let data else { return 0 }
        if let confined = context.confined,
            context.position < confined.range.lowerBound || context.position + UInt64(want) > confined.range.upperBound
        {
            context.fail(
                AssetPackError(
                    .integrityFailure,
                    "libzip read bytes outside this entry (at offset \(context.position)): the zip holds another directory than the one checked",
                    path: confined.path))
            return -1
        }
        do {
            let n = try context.source.read(
                into: UnsafeMutableRawBufferPointer(start: data, count: want), at: context.position)
            context.position += UInt64(n)
            return Int64(n)
        } catch {
            context.fail(error)
            return -1
        }
    case ZIP_SOURCE_CLOSE:
        return 0
    case ZIP_SOURCE_STAT:
        guard let data, length >= UInt64(MemoryLayout<zip_stat_t>.size) else {
            zip_error_set(context.zipError, ZIP_ER_INVAL, 0)
            return -1
        }
        let stat = data.assumingMemoryBound(to: zip_stat_t.self)
        zip_stat_init(stat)
        stat.pointee.size = size
        stat.pointee.comp_size = size
        stat.pointee.valid |= UInt64(ZIP_STAT_SIZE) | UInt64(ZIP_STAT_COMP_SIZE)
        return Int64(MemoryLayout<zip_stat_t>.size)
    case ZIP_SOURCE_ERROR:
        guard let data else { return -1 }
        return zip_error_to_data(context.zipError, data, length)
    case ZIP_SOURCE_FREE:
        Unmanaged<LibzipSourceContext>.fromOpaque(userdata!).release()
        return 0
    case ZIP_SOURCE_SEEK:
        guard let data else { return -1 }
        let offset = zip_source_seek_compute_offset(context.position, size, data, length, context.zipError)
        guard offset >= 0 else { return -1 }
        context.position = UInt64(offset)
        return 0
    case ZIP_SOURCE_TELL:
        return Int64(context.position)
    case ZIP_SOURCE_SUPPORTS:
        return seekableCommands
    default:
        zip_error_set(context.zipError, ZIP_ER_OPNOTSUPP, 0)
        return -1
    }
}
#endif
