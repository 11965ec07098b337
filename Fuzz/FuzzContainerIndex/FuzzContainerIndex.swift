// libFuzzer target: the container's header and index parsers on arbitrary bytes, past the
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
            _ = try? ContainerIndex.decode(
                UnsafeRawBufferPointer(rebasing: bytes[headerSize...]), chunkShift: header.chunkShift,
                dataEnd: header.indexOffset, limits: limits)
        }
        // The index alone, against a few plausible geometries.
        for shift: UInt8 in [12, 16] {
            _ = try? ContainerIndex.decode(
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
