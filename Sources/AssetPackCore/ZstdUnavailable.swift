#if !SystemLibraries
/// The portable configuration (no libzstd): the same names as Zstd.swift's, and every decode
/// throws ``Zstd/unavailable`` naming the codec. Packing zstd is refused before a compressor is
/// made (`PackOptions` validation), so making one here is a programming error.
extension Zstd {
    /// Not available in this build: ``Zstd/isAvailable`` is false.
    package final class Compressor {
        /// The level it was asked for.
        package let level: Int32

        /// Traps: packing checks ``Zstd/isAvailable`` before it asks for a compressor.
        package init(level: Int32, dictionary: [UInt8]? = nil) {
            preconditionFailure("zstd is not in this build (the portable configuration); check Zstd.isAvailable")
        }

        /// Never reached (the initialiser traps).
        package func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            nil
        }

        /// Never reached (the initialiser traps).
        package func bound(_ count: Int) -> Int { count }
    }

    /// A decoder that refuses every frame with ``Zstd/unavailable``.
    package final class Decompressor {
        /// A decoder without libzstd.
        package init() {}

        /// Loading a dictionary is deferred to the first zstd chunk, which fails there: the
        /// pack's deflate and stored entries stay readable.
        package convenience init(dictionary: [UInt8]) throws { self.init() }

        /// Throws ``Zstd/unavailable``.
        package func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
            throw Zstd.unavailable
        }
    }

    /// `nil`: no dictionary can be trained without libzstd.
    package static func trainDictionary(_ samples: [[UInt8]], capacity: Int) -> [UInt8]? { nil }
}
#endif
