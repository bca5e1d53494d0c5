@_spi(DispatchStoreNATS) import DispatchStore
import Foundation

extension Journal {
    // MARK: Records

    /// Writes `result`'s record, then takes a snapshot if `snapshotEvery` records were written
    /// since the last one and no other snapshot is being written.
    func write(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let line: Data
        switch ActionRecord.make(for: result, in: dispatcher, path: directory, checksumEvery: nil) {
        case .none, .skipped:
            // `.skipped`: an action that is not `Codable`, reported when its store registered.
            return
        case .failed(let error):
            stop(JournalError(record: error, code: .writeFailed))
            return
        case .line(let data):
            line = data
        }
        let id = result.transaction.id
        let (failure, snapshotDue) = state.withLockedValue { state -> (JournalError?, Bool) in
            guard let file = state.file, !state.stopped, !state.closed else {
                state.refused += 1
                guard state.refused == 1 else { return (nil, false) }
                let why = state.closed ? "the journal was closed" : "the journal stopped after a failed write"
                let error = JournalError(
                    .closed,
                    path: directory,
                    message: "transaction #\(id) was not recorded in \(directory): \(why)"
                )
                if state.firstFailure == nil { state.firstFailure = error }
                return (error, false)
            }
            if let reason = file.append(line, sync: syncsToDisk) {
                state.stopped = true
                let error = JournalError(
                    .writeFailed,
                    path: file.path,
                    message: "cannot write to \(file.path): \(reason); transaction #\(id) was not recorded, "
                        + "and the journal records nothing more"
                )
                if state.firstFailure == nil { state.firstFailure = error }
                return (error, false)
            }
            state.recordCount += 1
            state.sinceSnapshot += 1
            return (nil, state.sinceSnapshot >= snapshotEvery)
        }
        if let failure { onError?(failure) }
        if snapshotDue && snapshotLock.tryLock() {
            defer { snapshotLock.unlock() }
            do {
                try takeSnapshot()
            } catch {
                record(error)
                onError?(error)
            }
        }
    }

    /// Stops the journal after `error`: no more records.
    func stop(_ error: JournalError) {
        state.withLockedValue { state in
            state.stopped = true
            if state.firstFailure == nil { state.firstFailure = error }
        }
        onError?(error)
    }

    /// Keeps `error` as the first failure if there was none.
    func record(_ error: JournalError) {
        state.withLockedValue { state in
            if state.firstFailure == nil { state.firstFailure = error }
        }
    }

    /// Opens the records file of `generation` for appending.
    func openRecords(generation: Int) throws(JournalError) {
        let path = files.recordsPath(generation)
        do {
            let (file, _) = try AppendFile.open(path: path)
            state.withLockedValue { $0.file = file }
        } catch {
            throw JournalError(.writeFailed, path: path, message: "cannot open \(path) for writing: \(error.reason)")
        }
    }

    // MARK: Snapshots

    /// Starts the generation after `last` at once: its records file, then its snapshot.
    func startGeneration(after last: Int, in dispatcher: Dispatcher) throws(JournalError) {
        snapshotLock.lock()
        defer { snapshotLock.unlock() }
        state.withLockedValue { $0.generation = last }
        try takeSnapshot(in: dispatcher)
    }

    /// Takes a consistent cut of every store, switches to a new records file, writes the cut as the new generation's
    /// snapshot and removes what the previous snapshot makes unnecessary.
    ///
    /// Call while holding `snapshotLock`.
    func takeSnapshot(in given: Dispatcher? = nil) throws(JournalError) {
        // Under the records lock: no record is written between the cut and the switch, so every
        // record in the old file was applied before the cut.
        let taken = state.withLockedValue { state -> Result<(Int, Int, [StoreSnapshot]), JournalError> in
            guard !state.closed, !state.stopped else {
                return .failure(
                    JournalError(.closed, path: directory, message: "the journal in \(directory) is closed")
                )
            }
            guard let dispatcher = given ?? state.dispatcher?.value, let cut = dispatcher.consistentCut() else {
                return .failure(
                    JournalError(.writeFailed, path: directory, message: "no snapshot: the stores could not be read")
                )
            }
            let generation = state.generation + 1
            let path = files.recordsPath(generation)
            let file: AppendFile
            switch Result(catching: { () throws(AppendFile.Failure) in try AppendFile.open(path: path) }) {
            case .success(let opened):
                file = opened.0
            case .failure(let error):
                return .failure(
                    JournalError(.writeFailed, path: path, message: "cannot create \(path): \(error.reason)")
                )
            }
            state.file?.close()
            state.file = file
            state.generation = generation
            state.sinceSnapshot = 0
            return .success((generation, state.recordCount, cut))
        }
        let (generation, recordCount, cut) = try taken.get()
        let path = files.snapshotPath(generation)
        let data = try JournalSnapshot.encode(generation: generation, recordCount: recordCount, cut: cut, path: path)
        try files.writeAtomically(data, to: path)
        compact(keepingFrom: generation)
    }

    /// Removes the snapshots and records files older than the snapshot before `latest`: that one
    /// stays, with the records after it, in case `latest` turns out damaged.
    func compact(keepingFrom latest: Int) {
        guard let listing = try? files.list(),
            let previous = listing.snapshots.last(where: { $0 < latest })
        else { return }
        for generation in listing.snapshots where generation < previous {
            unlink(files.snapshotPath(generation))
        }
        for generation in listing.records where generation < previous {
            unlink(files.recordsPath(generation))
        }
        files.syncDirectory()
    }

    // MARK: Stores

    /// The registered stores, each checked to be journaled: `Codable` state and actions, nothing
    /// applied yet.
    static func checkStores(of dispatcher: Dispatcher, directory: String) throws(JournalError) -> [any JournaledStore] {
        var stores: [any JournaledStore] = []
        for store in dispatcher.stores {
            let journaled = try check(store, directory: directory)
            guard journaled.stateAndSequenceNumber().sequenceNumber == 0 else {
                throw JournalError(
                    .storeNotFresh,
                    path: directory,
                    storeIdentifier: store.identifier,
                    message: "store '\(store.identifier)' has applied actions already; open the journal in "
                        + "\(directory) before dispatching, so that it recovers the stores' states"
                )
            }
            stores.append(journaled)
        }
        return stores
    }

    /// Checks that `store`'s state and action types are `Codable`, and that it takes changes made
    /// outside its actions (recovery sets its state).
    static func check(_ store: any AnyStore, directory: String) throws(JournalError) -> any JournaledStore {
        if let reason = store.outsideChangeRefusal {
            throw JournalError(
                .outsideChangeRefused,
                path: directory,
                storeIdentifier: store.identifier,
                message: "the journal in \(directory) cannot keep store '\(store.identifier)': it refuses changes made "
                    + "outside its actions (\(reason)), and recovery would set its state"
            )
        }
        let problem: String?
        if !(store.stateType is any (StateType & Codable).Type) {
            problem = "its state type \(store.stateType) is not Codable"
        } else if !(store.actionType is any (ActionType & Codable).Type) {
            problem = "its action type \(store.actionType) is not Codable"
        } else {
            problem = nil
        }
        guard let journaled = store as? any JournaledStore, problem == nil else {
            throw JournalError(
                .notCodable,
                path: directory,
                storeIdentifier: store.identifier,
                message: "the journal in \(directory) cannot keep store '\(store.identifier)': "
                    + (problem ?? "it is not a Store") + "; make it Codable"
            )
        }
        return journaled
    }
}
