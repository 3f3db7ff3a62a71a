package wasi

// Errno is a WASI preview-1 error number, as the guest sees it.
type Errno = uint32

// Errno values of wasi_snapshot_preview1 (witx `errno`).
const (
	ErrnoSuccess     Errno = 0
	Errno2big        Errno = 1
	ErrnoAcces       Errno = 2
	ErrnoAgain       Errno = 6
	ErrnoBadf        Errno = 8
	ErrnoBusy        Errno = 10
	ErrnoDquot       Errno = 19
	ErrnoExist       Errno = 20
	ErrnoFault       Errno = 21
	ErrnoFbig        Errno = 22
	ErrnoIntr        Errno = 27
	ErrnoInval       Errno = 28
	ErrnoIo          Errno = 29
	ErrnoIsdir       Errno = 31
	ErrnoLoop        Errno = 32
	ErrnoMfile       Errno = 33
	ErrnoMlink       Errno = 34
	ErrnoNametoolong Errno = 37
	ErrnoNfile       Errno = 41
	ErrnoNoent       Errno = 44
	ErrnoNomem       Errno = 48
	ErrnoNospc       Errno = 51
	ErrnoNosys       Errno = 52
	ErrnoNotdir      Errno = 54
	ErrnoNotempty    Errno = 55
	ErrnoNotsock     Errno = 57
	ErrnoNotsup      Errno = 58
	ErrnoNxio        Errno = 60
	ErrnoOverflow    Errno = 61
	ErrnoPerm        Errno = 63
	ErrnoPipe        Errno = 64
	ErrnoRange       Errno = 68
	ErrnoRofs        Errno = 69
	ErrnoSpipe       Errno = 70
	ErrnoTxtbsy      Errno = 74
	ErrnoXdev        Errno = 75
	ErrnoNotcapable  Errno = 76
)

// Rights (witx `rights`).
const (
	RightFdDatasync uint64 = 1 << iota
	RightFdRead
	RightFdSeek
	RightFdFdstatSetFlags
	RightFdSync
	RightFdTell
	RightFdWrite
	RightFdAdvise
	RightFdAllocate
	RightPathCreateDirectory
	RightPathCreateFile
	RightPathLinkSource
	RightPathLinkTarget
	RightPathOpen
	RightFdReaddir
	RightPathReadlink
	RightPathRenameSource
	RightPathRenameTarget
	RightPathFilestatGet
	RightPathFilestatSetSize
	RightPathFilestatSetTimes
	RightFdFilestatGet
	RightFdFilestatSetSize
	RightFdFilestatSetTimes
	RightPathSymlink
	RightPathRemoveDirectory
	RightPathUnlinkFile
	RightPollFdReadwrite
	RightSockShutdown
	RightSockAccept
)

// Rights a descriptor of each kind can carry.
const (
	fileRights = RightFdDatasync | RightFdRead | RightFdSeek | RightFdFdstatSetFlags | RightFdSync |
		RightFdTell | RightFdWrite | RightFdAdvise | RightFdAllocate | RightFdFilestatGet |
		RightFdFilestatSetSize | RightFdFilestatSetTimes | RightPollFdReadwrite
	// A directory has no position: no fd_seek right (fd_tell stays, and
	// answers EISDIR like fd_seek).
	dirRights = RightFdFdstatSetFlags | RightFdSync | RightFdAdvise | RightFdTell |
		RightPathCreateDirectory | RightPathCreateFile | RightPathLinkSource | RightPathLinkTarget |
		RightPathOpen | RightFdReaddir | RightPathReadlink | RightPathRenameSource |
		RightPathRenameTarget | RightPathFilestatGet | RightPathFilestatSetSize |
		RightPathFilestatSetTimes | RightFdFilestatGet | RightFdFilestatSetTimes | RightPathSymlink |
		RightPathRemoveDirectory | RightPathUnlinkFile
	stdinRights  = RightFdRead | RightFdFdstatSetFlags | RightFdFilestatGet | RightPollFdReadwrite
	stdoutRights = RightFdWrite | RightFdFdstatSetFlags | RightFdFilestatGet | RightPollFdReadwrite
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
