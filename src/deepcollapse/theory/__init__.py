"""deepcollapse.theory"""
