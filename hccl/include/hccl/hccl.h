/* The collective library's C API, shaped as Ascend HCCL's (hccl.h / hccl_types.h): communicators from a
 * root info, collectives and send/recv enqueued on a stream of the simulated runtime, groups, error query
 * and abort. Buffers are device memory (npu_sim::malloc_device); `stream` is an npu_sim::Stream. Values
 * marked "simulator extension" are not in Ascend's HCCL (torch's c10d needs them). Torch-free. */
#ifndef NPU_SIM_HCCL_H_
#define NPU_SIM_HCCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* aclrtStream; /* an npu_sim::Stream */
typedef void* HcclComm;

typedef enum {
  HCCL_SUCCESS = 0,
  HCCL_E_PARA = 1,        /* bad argument; also: ranks disagree on a collective (desync) */
  HCCL_E_PTR = 2,         /* null pointer */
  HCCL_E_MEMORY = 3,
  HCCL_E_INTERNAL = 4,
  HCCL_E_NOT_SUPPORT = 5, /* dtype or reduce op not supported */
  HCCL_E_NOT_FOUND = 6,
  HCCL_E_UNAVAIL = 7,
  HCCL_E_SYSCALL = 8,
  HCCL_E_TIMEOUT = 9,     /* a peer did not take part in time (HCCL_EXEC_TIMEOUT / the op timeout) */
  HCCL_E_OPEN_FILE_FAILURE = 10,
  HCCL_E_TCP_CONNECT = 11, /* set-up: a rank could not reach the root or a peer (HCCL_CONNECT_TIMEOUT) */
  HCCL_E_ROCE_CONNECT = 12,
  HCCL_E_TCP_TRANSFER = 13,
  HCCL_E_ROCE_TRANSFER = 14,
  HCCL_E_RUNTIME = 15,    /* the runtime refused a call (bad stream, device failed) */
  HCCL_E_DRV = 16,
  HCCL_E_PROFILING = 17,
  HCCL_E_CCE = 18,
  HCCL_E_NETWORK = 19,
  HCCL_E_AGAIN = 20,
  HCCL_E_REMOTE = 21,     /* a peer is gone (its process ended or its connection closed) */
  HCCL_E_SUSPENDING = 22, /* the communicator was aborted (HcclCommAbort) */
  HCCL_E_RESERVED
} HcclResult;

typedef enum {
  HCCL_DATA_TYPE_INT8 = 0,
  HCCL_DATA_TYPE_INT16 = 1,
  HCCL_DATA_TYPE_INT32 = 2,
  HCCL_DATA_TYPE_FP16 = 3,
  HCCL_DATA_TYPE_FP32 = 4,
  HCCL_DATA_TYPE_INT64 = 5,
  HCCL_DATA_TYPE_UINT64 = 6, /* not supported here */
  HCCL_DATA_TYPE_UINT8 = 7,
  HCCL_DATA_TYPE_UINT16 = 8, /* not supported here */
  HCCL_DATA_TYPE_UINT32 = 9, /* not supported here */
  HCCL_DATA_TYPE_FP64 = 10,
  HCCL_DATA_TYPE_BFP16 = 11,
  HCCL_DATA_TYPE_INT128 = 12, /* not supported here */
  HCCL_DATA_TYPE_SIM_BOOL = 100,      /* simulator extension */
  HCCL_DATA_TYPE_SIM_COMPLEX64 = 101, /* simulator extension */
  HCCL_DATA_TYPE_SIM_COMPLEX128 = 102 /* simulator extension */
} HcclDataType;

typedef enum {
  HCCL_REDUCE_SUM = 0,
  HCCL_REDUCE_PROD = 1,
  HCCL_REDUCE_MAX = 2,
  HCCL_REDUCE_MIN = 3,
  HCCL_REDUCE_SIM_BAND = 100, /* simulator extension (c10d's bitwise reductions) */
  HCCL_REDUCE_SIM_BOR = 101,
  HCCL_REDUCE_SIM_BXOR = 102
} HcclReduceOp;

#define HCCL_ROOT_INFO_BYTES 4108
/* Made by HcclGetRootInfo on one rank and handed to every rank out of band (torch: the c10d Store). */
typedef struct HcclRootInfoDef {
  char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

/* Options of a communicator. Initialise with HcclCommConfigInit; fields left at their defaults take the
 * environment's values (HCCL_BUFFSIZE, HCCL_EXEC_TIMEOUT). */
typedef struct HcclCommConfigDef {
  uint32_t hcclBufferSize;   /* MB per peer ring; 0: HCCL_BUFFSIZE */
  char hcclCommName[128];    /* for messages; may be empty */
  int32_t npuSimDevice;      /* simulator extension: this rank's device (-1: 0) */
  uint32_t npuSimOpTimeoutMs; /* simulator extension: per-operation timeout; 0: HCCL_EXEC_TIMEOUT, else 30 min */
} HcclCommConfig;

void HcclCommConfigInit(HcclCommConfig* config);

const char* HcclGetErrorString(HcclResult code);
/* Simulator extension (as ACL's aclGetRecentErrMsg): what the last failed call of this thread said,
 * "" if none. Valid until the thread's next failed call. */
const char* HcclGetLastErrorMessage(void);

/* --- Communicators --------------------------------------------------------------------------------- */
/* Called on one rank (the root): starts its bootstrap server and describes it. */
HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo);
/* Every rank, with the root's info: connects through the root, exchanges addresses, sets up the
 * transports (shared memory within a host, TCP across hosts). Blocks until all nRanks have joined or
 * HCCL_CONNECT_TIMEOUT passes (HCCL_E_TCP_CONNECT / HCCL_E_TIMEOUT). */
HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank, HcclComm* comm);
HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank,
                                      const HcclCommConfig* config, HcclComm* comm);
/* Frees the handle. Collectives already enqueued still run (they hold the communicator); send/recvs that
 * have not ended fail ("destroyed with p2p operations pending"). Synchronize the streams first. */
HcclResult HcclCommDestroy(HcclComm comm);
HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize);
HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank);
/* Name of the transport the collectives use ("shm", "tcp", "shm+tcp"); simulator extension. */
HcclResult HcclGetTransportName(HcclComm comm, const char** name);

/* --- Collectives: enqueued on `stream`, run when the stream reaches them ------------------------------ */
HcclResult HcclAllReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream);
HcclResult HcclBroadcast(void* buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream);
/* recvBuf gets the recvCount elements of block `rank` of the reduction of every rank's sendBuf. */
HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream);
/* recvBuf (nRanks * sendCount elements) gets rank r's sendBuf in block r. */
HcclResult HcclAllGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream);
/* recvBuf is written on the root only; the other ranks' sendBuf stays unchanged. */
HcclResult HcclReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream stream);
/* sendCounts/sdispls/recvCounts/rdispls: nRanks uint64_t each, in elements. */
HcclResult HcclAlltoAllV(const void* sendBuf, const void* sendCounts, const void* sdispls, HcclDataType sendType,
                         const void* recvBuf, const void* recvCounts, const void* rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream);
HcclResult HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType, const void* recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream);
/* The root's sendBuf (nRanks * recvCount elements) block r goes to rank r's recvBuf. */
HcclResult HcclScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType, uint32_t root,
                       HcclComm comm, aclrtStream stream);
/* Simulator extension (HCCL has none): rank r's sendBuf goes to block r of the root's recvBuf. */
HcclResult HcclGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType, uint32_t root,
                      HcclComm comm, aclrtStream stream);
HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);

/* --- Point to point ----------------------------------------------------------------------------------
 * Messages between two ranks match in posting order. An operation starts once `stream` has reached it
 * and the stream goes on when it has ended. Outside a group each is its own stream task; between
 * HcclGroupStart and HcclGroupEnd the send/recvs of one stream become one task that progresses them all
 * at once (so a pair's exchange in both directions cannot deadlock). */
HcclResult HcclSend(void* sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream);
HcclResult HcclRecv(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream);
/* Simulator extension (torch's recv from any source): *srcRank is written when the message has arrived
 * (read it after synchronizing the stream). Same stream-ordering rules as HcclRecv. */
HcclResult HcclRecvAny(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t* srcRank, HcclComm comm,
                       aclrtStream stream);
HcclResult HcclGroupStart(void);
HcclResult HcclGroupEnd(void);

/* --- Errors --------------------------------------------------------------------------------------------
 * A failed operation fails its stream (the runtime's error is sticky: every later synchronize reports
 * it) and breaks the communicator: every later operation fails at once with the first error. */
HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult* asyncError);
/* Simulator extension: the first failure's message ("" when none), as ncclGetLastError. */
const char* HcclGetCommAsyncErrorString(HcclComm comm);
/* Ends every pending and later operation of the communicator with HCCL_E_SUSPENDING. */
HcclResult HcclCommAbort(HcclComm comm);
/* Simulator extension: the timeout of operations enqueued from now on (> 0; HCCL_EXEC_TIMEOUT still bounds it). */
HcclResult HcclCommSetOpTimeout(HcclComm comm, uint32_t timeoutMs);

#ifdef __cplusplus
}
#endif

#endif /* NPU_SIM_HCCL_H_ */
