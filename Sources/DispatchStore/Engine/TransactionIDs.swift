private let transactionIDBlocks = LockedBox<UInt64>(0)

/// Reserves a block of transaction ids, so that ids are unique in the process without a global
/// lock per dispatch.
///
/// - Parameter size: How many ids to reserve.
/// - Returns: The first id of the block and the id after its last.
func reserveTransactionIDBlock(size: UInt64 = 4096) -> (UInt64, UInt64) {
    transactionIDBlocks.withLockedValue { next in
        defer { next += size }
        return (next + 1, next + 1 + size)
    }
}
