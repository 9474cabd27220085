; ---- Loom pointwise kernel ce1_relu_scale_bias (from "ce1_relu_scale_bias"), LLVM IR for the host ----
; host schedule: 16 lanes per vector; 2048 tasks of 32768; non-temporal stores (the kernel moves more than the last-level cache holds)
; bytes per element: 8; parameters: 32 bytes (pack_params)
; space: rank 1, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; out0: float32, contiguous
; scalars: float32, float32
; entry point: @ce1_relu_scale_bias(params, begin, end), one call per task

; elements [begin, end) of the iteration space
define void @ce1_relu_scale_bias(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %e.slot = alloca i64
  %j.slot = alloca i64
  %k.slot = alloca i64
  ; parameters (the packed struct of pack_params)
  %in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %in0 = load ptr, ptr %in0.at, align 8                                      ; input 0 "x" float32, contiguous (test_llvm_golden.cpp:98)
  %out0.at = getelementptr inbounds i8, ptr %p, i64 8
  %out0 = load ptr, ptr %out0.at, align 8                                    ; output 0, contiguous
  %n.at = getelementptr inbounds i8, ptr %p, i64 16
  %n = load i32, ptr %n.at, align 4                                          ; elements of the iteration space
  %n.i64 = sext i32 %n to i64
  %s0.at = getelementptr inbounds i8, ptr %p, i64 20
  %s0 = load float, ptr %s0.at, align 4                                      ; scalar float32 (test_llvm_golden.cpp:98)
  %s1.at = getelementptr inbounds i8, ptr %p, i64 24
  %s1 = load float, ptr %s1.at, align 4                                      ; scalar float32 (test_llvm_golden.cpp:98)
  ; the task's first element as a multi-index of the iteration space
  store i64 %begin, ptr %e.slot
  store i64 %begin, ptr %j.slot
  br label %row
row:
  %e = load i64, ptr %e.slot
  %j = load i64, ptr %j.slot
  %left = sub i64 %end, %e
  %jend = add i64 %j, %left
  store i64 %j, ptr %k.slot
  ; streaming: width-1 steps up to the first position where every streamed output is aligned to its vector, then vector steps with non-temporal stores
  %out0.p = getelementptr inbounds float, ptr %out0, i64 %j
  %st.a0 = ptrtoint ptr %out0.p to i64                                       ; out0 at the row's first element
  %st.mis = and i64 %st.a0, 63
  %st.gap0 = sub i64 64, %st.mis
  %st.gap = and i64 %st.gap0, 63                                             ; bytes to the next aligned vector
  %st.peel = udiv i64 %st.gap, 4                                             ; elements before it
  %st.k = add i64 %j, %st.peel
  %st.kw = add i64 %st.k, 16
  %st.room = icmp ule i64 %st.kw, %jend                                      ; a whole vector after it
  %st.el = and i64 %st.a0, 3
  %st.el0 = icmp eq i64 %st.el, 0                                            ; out0 aligned to its elements
  %st.ok = and i1 %st.room, %st.el0
  br i1 %st.ok, label %stream, label %stream.done
stream:
  br label %stream.peel.cond
stream.peel.cond:
  %stream.peel = load i64, ptr %k.slot
  %p.k.next = add i64 %stream.peel, 1
  %p.more = icmp ule i64 %p.k.next, %st.k                                    ; an element left
  br i1 %p.more, label %stream.peel.body, label %stream.peel.done
stream.peel.body:
  %p.v0.p = getelementptr inbounds float, ptr %in0, i64 %stream.peel
  %p.v0.m = load float, ptr %p.v0.p, align 4                                 ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:98)
  %p.v2 = fmul float %p.v0.m, %s0                                            ; mul (test_llvm_golden.cpp:98)
  %p.v4 = fadd float %p.v2, %s1                                              ; add (test_llvm_golden.cpp:98)
  %p.v5.keep = fcmp ugt float %p.v4, zeroinitializer
  %p.v5 = select i1 %p.v5.keep, float %p.v4, float zeroinitializer           ; relu (test_llvm_golden.cpp:98)
  %out0.p.1 = getelementptr inbounds float, ptr %out0, i64 %stream.peel
  store float %p.v5, ptr %out0.p.1, align 4                                  ; store out0 (float32)
  store i64 %p.k.next, ptr %k.slot
  br label %stream.peel.cond
stream.peel.done:
  br label %stream.w16.cond
stream.w16.cond:
  %stream.w16 = load i64, ptr %k.slot
  %nt.k.next = add i64 %stream.w16, 16
  %nt.more = icmp ule i64 %nt.k.next, %jend                                  ; a whole vector of 16 elements left
  br i1 %nt.more, label %stream.w16.body, label %stream.w16.done
stream.w16.body:
  %nt.v0.p = getelementptr inbounds float, ptr %in0, i64 %stream.w16
  %nt.v0.m = load <16 x float>, ptr %nt.v0.p, align 4                        ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:98)
  %nt.v1.ins = insertelement <16 x float> poison, float %s0, i64 0
  %nt.v1 = shufflevector <16 x float> %nt.v1.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %nt.v2 = fmul <16 x float> %nt.v0.m, %nt.v1                                ; mul (test_llvm_golden.cpp:98)
  %nt.v3.ins = insertelement <16 x float> poison, float %s1, i64 0
  %nt.v3 = shufflevector <16 x float> %nt.v3.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %nt.v4 = fadd <16 x float> %nt.v2, %nt.v3                                  ; add (test_llvm_golden.cpp:98)
  %nt.v5.keep = fcmp ugt <16 x float> %nt.v4, zeroinitializer
  %nt.v5 = select <16 x i1> %nt.v5.keep, <16 x float> %nt.v4, <16 x float> zeroinitializer ; relu (test_llvm_golden.cpp:98)
  %out0.p.2 = getelementptr inbounds float, ptr %out0, i64 %stream.w16
  store <16 x float> %nt.v5, ptr %out0.p.2, align 64, !nontemporal !{i32 1}  ; store out0 (float32), bypassing the caches
  store i64 %nt.k.next, ptr %k.slot
  br label %stream.w16.cond
stream.w16.done:
  br label %stream.done
stream.done:
  ; vector steps: 16 elements per operand at once
  br label %vector.cond
vector.cond:
  %vector = load i64, ptr %k.slot
  %k.next = add i64 %vector, 16
  %more = icmp ule i64 %k.next, %jend                                        ; a whole vector of 16 elements left
  br i1 %more, label %vector.body, label %vector.done
vector.body:
  %v0.p = getelementptr inbounds float, ptr %in0, i64 %vector
  %v0.m = load <16 x float>, ptr %v0.p, align 4                              ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:98)
  %v1.ins = insertelement <16 x float> poison, float %s0, i64 0
  %v1 = shufflevector <16 x float> %v1.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %v2 = fmul <16 x float> %v0.m, %v1                                         ; mul (test_llvm_golden.cpp:98)
  %v3.ins = insertelement <16 x float> poison, float %s1, i64 0
  %v3 = shufflevector <16 x float> %v3.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %v4 = fadd <16 x float> %v2, %v3                                           ; add (test_llvm_golden.cpp:98)
  %v5.keep = fcmp ugt <16 x float> %v4, zeroinitializer
  %v5 = select <16 x i1> %v5.keep, <16 x float> %v4, <16 x float> zeroinitializer ; relu (test_llvm_golden.cpp:98)
  %out0.p.3 = getelementptr inbounds float, ptr %out0, i64 %vector
  store <16 x float> %v5, ptr %out0.p.3, align 4                             ; store out0 (float32)
  store i64 %k.next, ptr %k.slot
  br label %vector.cond
vector.done:
  ; the row's tail: one element at a time, the same instructions at width 1
  br label %tail.cond
tail.cond:
  %tail = load i64, ptr %k.slot
  %t.k.next = add i64 %tail, 1
  %t.more = icmp ule i64 %t.k.next, %jend                                    ; an element left
  br i1 %t.more, label %tail.body, label %tail.done
tail.body:
  %t.v0.p = getelementptr inbounds float, ptr %in0, i64 %tail
  %t.v0.m = load float, ptr %t.v0.p, align 4                                 ; load in0: "x" float32 (contiguous, test_llvm_golden.cpp:98)
  %t.v2 = fmul float %t.v0.m, %s0                                            ; mul (test_llvm_golden.cpp:98)
  %t.v4 = fadd float %t.v2, %s1                                              ; add (test_llvm_golden.cpp:98)
  %t.v5.keep = fcmp ugt float %t.v4, zeroinitializer
  %t.v5 = select i1 %t.v5.keep, float %t.v4, float zeroinitializer           ; relu (test_llvm_golden.cpp:98)
  %out0.p.4 = getelementptr inbounds float, ptr %out0, i64 %tail
  store float %t.v5, ptr %out0.p.4, align 4                                  ; store out0 (float32)
  store i64 %t.k.next, ptr %k.slot
  br label %tail.cond
tail.done:
  br label %row.end
row.end:
  %e.next = add i64 %e, %left
  store i64 %e.next, ptr %e.slot
  br label %exit
exit:
  ret void
}

attributes #0 = { nounwind "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
attributes #1 = { nounwind alwaysinline "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
