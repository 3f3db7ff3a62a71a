package wasi

// errnum is a WASI preview-1 error number, as the guest sees it.
type errnum = uint32

// errnum values of wasi_snapshot_preview1 (witx `errno`).
const (
	errnoSuccess     errnum = 0
	errno2big        errnum = 1
	errnoAcces       errnum = 2
	errnoAgain       errnum = 6
	errnoBadf        errnum = 8
	errnoBusy        errnum = 10
	errnoDquot       errnum = 19
	errnoExist       errnum = 20
	errnoFault       errnum = 21
	errnoFbig        errnum = 22
	errnoIntr        errnum = 27
	errnoInval       errnum = 28
	errnoIo          errnum = 29
	errnoIsdir       errnum = 31
	errnoLoop        errnum = 32
	errnoMfile       errnum = 33
	errnoMlink       errnum = 34
	errnoNametoolong errnum = 37
	errnoNfile       errnum = 41
	errnoNoent       errnum = 44
	errnoNomem       errnum = 48
	errnoNospc       errnum = 51
	errnoNosys       errnum = 52
	errnoNotdir      errnum = 54
	errnoNotempty    errnum = 55
	errnoNotsock     errnum = 57
	errnoNotsup      errnum = 58
	errnoNxio        errnum = 60
	errnoOverflow    errnum = 61
	errnoPerm        errnum = 63
	errnoPipe        errnum = 64
	errnoRange       errnum = 68
	errnoRofs        errnum = 69
	errnoSpipe       errnum = 70
	errnoTxtbsy      errnum = 74
	errnoXdev        errnum = 75
	errnoNotcapable  errnum = 76
)

// Rights (witx `rights`).
const (
	rightFdDatasync uint64 = 1 << iota
	rightFdRead
	rightFdSeek
	rightFdFdstatSetFlags
	rightFdSync
	rightFdTell
	rightFdWrite
	rightFdAdvise
	rightFdAllocate
	rightPathCreateDirectory
	rightPathCreateFile
	rightPathLinkSource
	rightPathLinkTarget
	rightPathOpen
	rightFdReaddir
	rightPathReadlink
	rightPathRenameSource
	rightPathRenameTarget
	rightPathFilestatGet
	rightPathFilestatSetSize
	rightPathFilestatSetTimes
	rightFdFilestatGet
	rightFdFilestatSetSize
	rightFdFilestatSetTimes
	rightPathSymlink
	rightPathRemoveDirectory
	rightPathUnlinkFile
	rightPollFdReadwrite
	rightSockShutdown
	rightSockAccept
)

// Rights a descriptor of each kind can carry.
const (
	fileRights = rightFdDatasync | rightFdRead | rightFdSeek | rightFdFdstatSetFlags | rightFdSync |
		rightFdTell | rightFdWrite | rightFdAdvise | rightFdAllocate | rightFdFilestatGet |
		rightFdFilestatSetSize | rightFdFilestatSetTimes | rightPollFdReadwrite
	// A directory has no position: no fd_seek right (fd_tell stays, and
	// answers EISDIR like fd_seek).
	dirRights = rightFdFdstatSetFlags | rightFdSync | rightFdAdvise | rightFdTell |
		rightPathCreateDirectory | rightPathCreateFile | rightPathLinkSource | rightPathLinkTarget |
		rightPathOpen | rightFdReaddir | rightPathReadlink | rightPathRenameSource |
		rightPathRenameTarget | rightPathFilestatGet | rightPathFilestatSetSize |
		rightPathFilestatSetTimes | rightFdFilestatGet | rightFdFilestatSetTimes | rightPathSymlink |
		rightPathRemoveDirectory | rightPathUnlinkFile
	stdinRights  = rightFdRead | rightFdFdstatSetFlags | rightFdFilestatGet | rightPollFdReadwrite
	stdoutRights = rightFdWrite | rightFdFdstatSetFlags | rightFdFilestatGet | rightPollFdReadwrite
)

// File types (witx `filetype`).
const (
	filetypeUnknown         uint8 = 0
	filetypeBlockDevice     uint8 = 1
	filetypeCharacterDevice uint8 = 2
	filetypeDirectory       uint8 = 3
	filetypeRegularFile     uint8 = 4
	filetypeSocketDgram     uint8 = 5
	filetypeSocketStream    uint8 = 6
	filetypeSymbolicLink    uint8 = 7
)

// fdflags, oflags, lookupflags, fstflags, whence, event types.
const (
	fdflagAppend   uint16 = 1
	fdflagDsync    uint16 = 2
	fdflagNonblock uint16 = 4
	fdflagRsync    uint16 = 8
	fdflagSync     uint16 = 16
	fdflagsAll            = fdflagAppend | fdflagDsync | fdflagNonblock | fdflagRsync | fdflagSync

	oflagCreat     uint16 = 1
	oflagDirectory uint16 = 2
	oflagExcl      uint16 = 4
	oflagTrunc     uint16 = 8

	lookupSymlinkFollow uint32 = 1

	fstAtim    uint16 = 1
	fstAtimNow uint16 = 2
	fstMtim    uint16 = 4
	fstMtimNow uint16 = 8

	whenceSet = 0
	whenceCur = 1
	whenceEnd = 2

	eventtypeClock   uint8 = 0
	eventtypeFdRead  uint8 = 1
	eventtypeFdWrite uint8 = 2

	subclockAbstime uint16 = 1

	eventFdReadwriteHangup uint16 = 1

	clockRealtime  uint32 = 0
	clockMonotonic uint32 = 1
	clockProcess   uint32 = 2
	clockThread    uint32 = 3
)

// Record sizes of the witx.
const (
	sizeFdstat       = 24
	sizeFilestat     = 64
	sizeDirent       = 24
	sizeIovec        = 8
	sizeSubscription = 48
	sizeEvent        = 32
	sizePrestat      = 8
)
