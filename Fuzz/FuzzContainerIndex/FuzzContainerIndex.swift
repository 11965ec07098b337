// libFuzzer target: the container's header and index parsers (versions 1–3 and 4) on arbitrary bytes, past the
// cryptography (as if the key were known and the index had authenticated). Built by `make fuzz`.
import AssetPackContainer
import AssetPackCore
import FuzzSupport

#if FUZZING
    let limits: ReadLimits = {
        var l = ReadLimits()
        l.maxEntries = 100_000
        return l
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzContainerIndex(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        let bytes = UnsafeRawBufferPointer(start: data, count: size)
        let headerSize = ContainerFormat.headerSize
        if size >= headerSize,
            let header = try? ContainerHeader.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<headerSize]))
        {
            _ = try? header.checkKDF(limits)
            let index = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
            if header.hasChunkTable {
                _ = try? ContainerIndex.decodeV4(
                    index, chunkShift: header.chunkShift, dataEnd: header.indexOffset, limits: limits)
            } else {
                _ = try? ContainerIndex.decode(
                    index, version: header.version, chunkShift: header.chunkShift, dataEnd: header.indexOffset,
                    limits: limits)
            }
        }
        // The index alone, against a few plausible geometries.
        for shift: UInt8 in [12, 16] {
            _ = try? ContainerIndex.decode(
                bytes, chunkShift: shift, dataEnd: UInt64(headerSize) + UInt64(size) * 4, limits: limits)
        }
        // Version 4 (content-defined chunks), with the writer's default bounds and the tests' small ones.
        for shift: UInt8 in [14, 18] {
            _ = try? ContainerIndex.decodeV4(
                bytes, chunkShift: shift, dataEnd: UInt64(headerSize) + UInt64(size) * 4, limits: limits)
        }
        return 0
    }

    @_cdecl("FuzzContainerIndex_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        runFuzzer(argc, argv, fuzzContainerIndex)
    }
#else
    @main enum FuzzContainerIndex {
        static func main() { fuzzStub() }
    }
#endif
